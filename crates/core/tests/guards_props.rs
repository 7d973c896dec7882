//! Property tests: the guards never panic, and an unchanged text never
//! trips any guard (every guard is relative to the original).

use coderig::check_guards;
use proptest::prelude::*;

fn codeish() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        "\\PC{0,30}",
        "[ -~]{0,40}",
        Just("import { a, b } from 'm';".to_string()),
        Just("from x import (".to_string()),
        Just("use a::{b, c::{d".to_string()),
        Just("import (".to_string()),
        Just("\t\"fmt\"".to_string()),
        Just("// ... existing code ...".to_string()),
        Just("=======".to_string()),
        Just("<<<<<<< HEAD".to_string()),
        Just("export * from".to_string()),
        Just("require('".to_string()),
    ];
    prop::collection::vec(line, 0..16).prop_map(|l| l.join("\n"))
}

fn path() -> impl Strategy<Value = Option<String>> {
    prop::option::of(prop_oneof![
        Just("a.ts".to_string()),
        Just("a.py".to_string()),
        Just("lib.rs".to_string()),
        Just("main.go".to_string()),
        Just("A.java".to_string()),
        Just("x.txt".to_string()),
        "\\PC{0,10}",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn check_never_panics(a in codeish(), b in codeish(), p in path()) {
        for v in check_guards(&a, &b, p.as_deref()) {
            prop_assert!(!v.message.is_empty());
        }
    }

    #[test]
    fn an_unchanged_text_trips_nothing(a in codeish(), p in path()) {
        prop_assert_eq!(check_guards(&a, &a, p.as_deref()), vec![]);
    }

    #[test]
    fn appending_plain_lines_trips_nothing(a in codeish(), extra in "[a-z ]{0,20}", p in path()) {
        let b = format!("{a}\nlet {extra} = 1;\n");
        prop_assert_eq!(check_guards(&a, &b, p.as_deref()), vec![]);
    }
}
