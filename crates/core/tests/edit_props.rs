//! Property tests: exact edits are invertible, re-indenting a drifted
//! needle is safe, nothing panics.

use coderig::{apply_edit_with, locate, ApplyOptions, Edit, MatchKind, Tier};
use proptest::prelude::*;

fn no_guards() -> ApplyOptions {
    ApplyOptions {
        path: None,
        guards: false,
    }
}

/// Occurrences of `needle` in `hay`, overlapping ones included.
fn overlapping_count(hay: &str, needle: &str) -> usize {
    (0..hay.len())
        .filter(|&i| hay.is_char_boundary(i) && hay[i..].starts_with(needle))
        .count()
}

/// Small code-like files: lines of identifiers, punctuation and indentation.
fn file() -> impl Strategy<Value = String> {
    prop::collection::vec(
        "( {0,4}|\t)[a-z_]{1,8}( ?[=(),:+] ?[a-z0-9_]{0,6}){0,3}",
        1..30,
    )
    .prop_map(|lines| lines.join("\n") + "\n")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn exact_edit_then_inverse_restores(content in file(), a in any::<prop::sample::Index>(),
                                        len in 1usize..40, new in "[a-zA-Z0-9_ =()\n]{0,30}") {
        let start = a.index(content.len());
        let end = (start + len).min(content.len());
        let old = &content[start..end];
        // The engine counts overlapping occurrences ("aa" is twice in "aaa"), so must we.
        prop_assume!(!old.is_empty() && overlapping_count(&content, old) == 1);
        let e = Edit { old: old.to_string(), new: new.clone(), replace_all: false };
        match apply_edit_with(&content, &e, &no_guards()) {
            Ok(r) => {
                prop_assert_eq!(r.tier, Tier::Exact);
                prop_assert_eq!(r.replacements, 1);
                prop_assume!(!new.is_empty() && overlapping_count(&r.content, &new) == 1);
                let inverse = Edit { old: new.clone(), new: old.to_string(), replace_all: false };
                let back = apply_edit_with(&r.content, &inverse, &no_guards()).unwrap();
                prop_assert_eq!(back.content, content);
            }
            Err(err) => prop_assert_eq!(err.code(), "NO_OP"),
        }
    }

    #[test]
    fn nothing_panics_on_arbitrary_input(content in "(?s).{0,200}", needle in "(?s).{0,40}",
                                         new in "(?s).{0,40}", replace_all in any::<bool>()) {
        let m = locate(&content, &needle);
        if let Some(span) = &m.span {
            prop_assert!(content.is_char_boundary(span.start) && content.is_char_boundary(span.end));
            prop_assert!(span.start <= span.end && span.end <= content.len());
        }
        if m.kind == MatchKind::Ambiguous {
            prop_assert!(m.count >= 2);
        }
        let e = Edit { old: needle, new, replace_all };
        let _ = apply_edit_with(&content, &e, &no_guards());
    }

    #[test]
    fn nothing_panics_on_near_miss_inputs(content in file(), a in any::<prop::sample::Index>(),
                                          noise in "[ \t\r\n\u{2018}\u{2019}\u{201C}\u{2014}\u{2026}\u{00A0}\\\\ntxyz\"']{1,6}") {
        // Needles close to real text exercise the tolerant tiers.
        let start = a.index(content.len());
        let mut needle = content[start..].chars().take(60).collect::<String>();
        let cut = needle.len() / 2;
        if needle.is_char_boundary(cut) {
            needle.insert_str(cut, &noise);
        }
        let m = locate(&content, &needle);
        if let Some(span) = &m.span {
            prop_assert!(content.is_char_boundary(span.start) && content.is_char_boundary(span.end));
        }
        let e = Edit { old: needle, new: "replacement()\n".into(), replace_all: false };
        let _ = apply_edit_with(&content, &e, &no_guards());
    }

    #[test]
    fn drifted_needle_with_new_equal_to_old_changes_nothing(
        content in file(), a in any::<prop::sample::Index>(), len in 1usize..8,
        drifts in prop::collection::vec(prop::sample::select(vec!["", " ", "  ", "    ", "\t", "strip"]), 8),
        extra in "( {0,8}|\t{0,2})[a-z_]{1,8}\\(\\)",
    ) {
        // Any per-line indentation drift (none, a few spaces, a tab, or the
        // indentation stripped): whatever tier matches, a `new` equal to
        // `old` is a no-op (lines left as in `old` are the file's), and
        // re-indenting an added line never panics nor loses it.
        let lines: Vec<&str> = content.lines().collect();
        let start = a.index(lines.len());
        let end = (start + len).min(lines.len());
        let old: Vec<String> = lines[start..end]
            .iter()
            .zip(&drifts)
            .map(|(l, d)| if *d == "strip" { l.trim_start().to_string() } else { format!("{d}{l}") })
            .collect();
        let old = old.join("\n");
        prop_assume!(!old.trim().is_empty());
        let same = Edit { old: old.clone(), new: old.clone(), replace_all: false };
        match apply_edit_with(&content, &same, &no_guards()) {
            Ok(r) => prop_assert!(false, "changed the file: {:?}", r.content),
            Err(e) => prop_assert!(matches!(e.code(), "NO_OP" | "NOT_FOUND" | "AMBIGUOUS"), "{e}"),
        }
        let grown = Edit { old: old.clone(), new: format!("{old}\n{extra}"), replace_all: false };
        if let Ok(r) = apply_edit_with(&content, &grown, &no_guards()) {
            prop_assert!(r.content.contains(extra.trim_start()), "{:?}", r.content);
        }
    }
}
