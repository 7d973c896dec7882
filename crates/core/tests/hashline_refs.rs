//! `parse_ref` leniency and rejections; `validate` ranges, hints, mismatches.

use coderig::edit::hashline::{self, LineRef};
use coderig::EditError;

fn r(content: &str, line: usize) -> String {
    let text = content.split('\n').nth(line - 1).expect("line exists");
    format!("{line}#{}", hashline::line_hash(line, text))
}

/// A hash that is neither the current nor the legacy hash of `line`.
fn wrong_hash(line: usize, text: &str) -> String {
    let (cur, legacy) = (
        hashline::line_hash(line, text),
        hashline::legacy_line_hash(line, text),
    );
    let letters = hashline::ALPHABET;
    for &a in letters {
        for &b in letters {
            let h = format!("{}{}", char::from(a), char::from(b));
            if h != cur && h != legacy {
                return h;
            }
        }
    }
    unreachable!("256 hashes cannot all be taken by two")
}

#[test]
fn parse_ref_accepts_lenient_forms() {
    let cases = [
        ("12#VK", 12, "VK"),
        ("  12#VK  ", 12, "VK"),
        (">>> 12 # VK|text", 12, "VK"),
        (">>>12#VK|  return x;", 12, "VK"),
        ("+12#VK", 12, "VK"),
        ("-12#VK|foo", 12, "VK"),
        ("> 7#zp", 7, "ZP"),
        ("12#VK|", 12, "VK"),
        ("12 #VK   | x", 12, "VK"),
        ("\t1#HH\n", 1, "HH"),
        ("000123#MQ", 123, "MQ"),
    ];
    for (input, line, hash) in cases {
        let got = hashline::parse_ref(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        assert_eq!(
            got,
            LineRef {
                line,
                hash: hash.to_string()
            },
            "{input:?}"
        );
        assert_eq!(got.to_string(), format!("{line}#{hash}"));
    }
}

#[test]
fn parse_ref_rejects_malformed_refs_with_the_expected_form() {
    let cases = [
        "",
        "   ",
        "#VK",
        "12VK",
        "12#",
        "12#V",
        "12#VA",
        "12#VKX",
        "0#VK",
        "abc",
        "12#VK extra",
        "99999999999999999999999999#VK",
        "12#ÄK",
        "12:VK",
        "VK#12",
        "12##VK",
    ];
    for input in cases {
        match hashline::parse_ref(input) {
            Err(EditError::InvalidInput { message }) => {
                assert!(message.contains("LINE#HH"), "{input:?}: {message}");
                assert!(message.contains("12#VK"), "{input:?}: {message}");
            }
            other => panic!("{input:?} should be InvalidInput, got {other:?}"),
        }
    }
}

const FILE: &str = "fn a() {\n    one();\n}\n\nfn b() {\n    two();\n}\n";

#[test]
fn validate_accepts_every_ref_format_shows() {
    let refs: Vec<LineRef> = hashline::format(FILE)
        .lines()
        .map(|l| hashline::parse_ref(l).unwrap())
        .collect();
    assert_eq!(
        refs.len(),
        8,
        "7 lines and the empty one after the final newline"
    );
    hashline::validate(FILE, &refs).unwrap();
}

#[test]
fn validate_accepts_legacy_hashes() {
    let text = "    one();";
    let legacy = hashline::legacy_line_hash(2, text);
    assert_ne!(legacy, hashline::line_hash(2, text));
    hashline::validate_strs(FILE, &[&format!("2#{legacy}")]).unwrap();
}

#[test]
fn validate_strs_rejects_malformed_refs() {
    let err = hashline::validate_strs(FILE, &["2#VK", "two"]).unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
}

#[test]
fn out_of_range_line_gets_a_did_you_mean_hint() {
    // The hash of line 7 (`}`) depends on the line number; line 3 is also `}`
    // but hashes differently, so only line 7 matches.
    let h7 = hashline::line_hash(7, "}");
    let err = hashline::validate_strs(FILE, &[&format!("20#{h7}")]).unwrap_err();
    let EditError::InvalidInput { message } = err else {
        panic!("expected InvalidInput, got {err:?}")
    };
    assert!(message.contains("line 20 does not exist"), "{message}");
    assert!(message.contains("has 8 lines"), "{message}");
    assert!(message.contains(&format!("7#{h7}")), "{message}");
    assert!(message.contains("did you mean"), "{message}");
}

#[test]
fn out_of_range_nearest_matches_come_first() {
    let content = "x\nx\nx\nx\n";
    let h = hashline::line_hash(1, "x");
    let err = hashline::validate_strs(content, &[&format!("9#{h}")]).unwrap_err();
    let message = err.message().to_string();
    let pos4 = message.find(&format!("4#{h}")).expect("line 4 hinted");
    let pos2 = message.find(&format!("2#{h}")).expect("line 2 hinted");
    assert!(pos4 < pos2, "{message}");
    assert!(
        !message.contains(&format!("1#{h}")),
        "at most 3 hints: {message}"
    );
}

#[test]
fn out_of_range_without_match_says_so() {
    let content = "alpha\n";
    let unused = wrong_hash(1, "alpha");
    let err = hashline::validate_strs(content, &[&format!("5#{unused}")]).unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
    // `unused` could still be the hash of the empty line 2; check the message either way.
    let message = err.message();
    assert!(message.contains("line 5 does not exist"), "{message}");
    assert!(
        message.contains("no line has the hash") || message.contains("did you mean"),
        "{message}"
    );
}

#[test]
fn stale_refs_list_every_line_with_context_and_remaps() {
    let content = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\n";
    let s3 = format!("3#{}", wrong_hash(3, "l3"));
    let s11 = format!("11#{}", wrong_hash(11, "l11"));
    let ok5 = r(content, 5);
    let err = hashline::validate_strs(content, &[&s3, &ok5, &s11]).unwrap_err();
    let EditError::HashlineMismatch { message, remaps } = err else {
        panic!("expected HashlineMismatch, got {err:?}")
    };
    assert!(message.contains("2 line refs are stale"), "{message}");
    for n in 1..=5 {
        assert!(
            message.contains(&format!("{}|l{n}\n", r(content, n))),
            "line {n}: {message}"
        );
    }
    for n in 9..=13 {
        let text = if n == 13 {
            String::new()
        } else {
            format!("l{n}")
        };
        assert!(
            message.contains(&format!("{}|{text}\n", r(content, n))),
            "line {n}: {message}"
        );
    }
    assert!(
        !message.contains("|l7\n"),
        "line 7 is outside both windows: {message}"
    );
    assert!(
        message.contains(&format!(">>> {}|l3", r(content, 3))),
        "{message}"
    );
    assert!(
        message.contains(&format!(">>> {}|l11", r(content, 11))),
        "{message}"
    );
    assert!(
        message.contains(&format!("    {}|l4", r(content, 4))),
        "{message}"
    );
    assert!(
        message.contains(&format!("{s3} -> {}", r(content, 3))),
        "{message}"
    );
    assert_eq!(remaps.len(), 2);
    assert_eq!(remaps[&s3], r(content, 3));
    assert_eq!(remaps[&s11], r(content, 11));
}

#[test]
fn stale_ref_of_a_moved_line_points_at_its_new_place() {
    let before = "a\nb\ntarget line\nc\n";
    let after = "a\nnew\nb\ntarget line\nc\n";
    let old = r(before, 3);
    let err = hashline::validate_strs(after, &[&old]).unwrap_err();
    let message = err.message();
    assert_eq!(err.code(), "HASHLINE_MISMATCH");
    assert!(
        message.contains(&format!("now matches line 4: {}", r(after, 4))),
        "{message}"
    );
}

#[test]
fn adjacent_stale_lines_share_one_context_window() {
    let content = "l1\nl2\nl3\nl4\nl5\nl6\n";
    let a = format!("3#{}", wrong_hash(3, "l3"));
    let b = format!("4#{}", wrong_hash(4, "l4"));
    let err = hashline::validate_strs(content, &[&b, &a]).unwrap_err();
    let message = err.message();
    assert_eq!(message.matches("|l3\n").count(), 1, "{message}");
    assert!(!message.contains("    ...\n"), "one window: {message}");
}

/// A hash that no line of `content` has (current hashes, as `format` shows them).
fn hash_of_no_line(content: &str) -> String {
    let taken: Vec<String> = content
        .split('\n')
        .enumerate()
        .map(|(i, t)| hashline::line_hash(i + 1, t))
        .collect();
    let letters = hashline::ALPHABET;
    letters
        .iter()
        .flat_map(|&a| {
            letters
                .iter()
                .map(move |&b| format!("{}{}", char::from(a), char::from(b)))
        })
        .find(|h| !taken.contains(h))
        .expect("a file of 8 lines leaves hashes free")
}

#[test]
fn bad_line_numbers_get_a_did_you_mean_hint_when_the_hash_names_a_line() {
    // `    one();` has letters, so its hash does not depend on its line number.
    let h = hashline::line_hash(2, "    one();");
    let want = format!("did you mean 2#{h}?");
    // (ref, reason the message must give)
    let cases = [
        (format!("0#{h}"), "line numbers start at 1"),
        (format!("line#{h}"), "no line number"),
        (format!("#{h}"), "no line number"),
        (format!("L2#{h}"), "no line number"),
        (
            format!(">>> line 2 # {}|    one();", h.to_lowercase()),
            "no line number",
        ),
        (format!("2a#{h}"), "no '#' after the line number"),
        (
            format!("99999999999999999999999999#{h}"),
            "line number too large",
        ),
    ];
    for (r, reason) in &cases {
        let err = hashline::validate_strs(FILE, &[r.as_str()]).unwrap_err();
        let message = err.message();
        assert_eq!(err.code(), "INVALID_INPUT", "{r:?}");
        assert!(message.contains(reason), "{r:?}: {message}");
        assert!(message.contains("LINE#HH"), "{r:?}: {message}");
        assert!(message.contains(&want), "{r:?}: {message}");

        // The same ref in a hashline edit: the hint, and which edit and field.
        let edit = hashline::HashlineEdit::Replace {
            pos: r.clone(),
            end: None,
            lines: "    uno();".into(),
        };
        let err = hashline::apply(FILE, &[edit]).unwrap_err();
        let message = err.message();
        assert_eq!(err.code(), "INVALID_INPUT", "{r:?}");
        assert!(message.starts_with("`edits[0].pos`: "), "{r:?}: {message}");
        assert!(message.contains(&want), "{r:?}: {message}");
    }
}

#[test]
fn bad_line_numbers_without_a_usable_hash_get_no_hint() {
    let free = hash_of_no_line(FILE);
    // (ref, what the message must say instead of a hint)
    let cases = [
        (format!("0#{free}"), "no line has the hash"),
        (format!("line#{free}"), "no line has the hash"),
        ("0#VA".to_string(), "line numbers start at 1"),
        ("0#".to_string(), "line numbers start at 1"),
        ("line".to_string(), "no line number"),
        ("2#VA".to_string(), "two letters of ZPMQVRWSNKTXJBYH"),
    ];
    for (r, phrase) in &cases {
        let err = hashline::validate_strs(FILE, &[r.as_str()]).unwrap_err();
        let message = err.message();
        assert_eq!(err.code(), "INVALID_INPUT", "{r:?}");
        assert!(message.contains(phrase), "{r:?}: {message}");
        assert!(!message.contains("did you mean"), "{r:?}: {message}");
    }
}

#[test]
fn bad_line_number_hints_list_the_lines_nearest_to_the_one_meant() {
    let content = "x\nx\nx\nx\nx\nx\n";
    let h = hashline::line_hash(1, "x");
    // (ref, refs hinted in this order, a ref that must not be hinted)
    let cases = [
        (format!("0#{h}"), vec![1, 2, 3], 4),
        (format!("L5#{h}"), vec![5, 4, 6], 3),
        (format!("line#{h}"), vec![1, 2, 3], 4),
    ];
    for (r, order, absent) in &cases {
        let message = hashline::validate_strs(content, &[r.as_str()])
            .unwrap_err()
            .message()
            .to_string();
        let positions: Vec<usize> = order
            .iter()
            .map(|n| {
                message
                    .find(&format!(" {n}#{h}"))
                    .unwrap_or_else(|| panic!("{r:?}: {n}#{h} hinted: {message}"))
            })
            .collect();
        assert!(
            positions.windows(2).all(|w| w[0] < w[1]),
            "{r:?}: {message}"
        );
        assert!(
            !message.contains(&format!(" {absent}#{h}")),
            "{r:?}: {message}"
        );
    }
}

#[test]
fn a_typed_ref_to_line_zero_says_lines_start_at_one_and_hints() {
    let h = hashline::line_hash(6, "    two();");
    let err = hashline::validate(
        FILE,
        &[LineRef {
            line: 0,
            hash: h.clone(),
        }],
    )
    .unwrap_err();
    let message = err.message();
    assert_eq!(err.code(), "INVALID_INPUT");
    assert!(
        message.contains("line 0 does not exist (line numbers start at 1)"),
        "{message}"
    );
    assert!(
        message.contains(&format!("did you mean 6#{h}?")),
        "{message}"
    );
}
