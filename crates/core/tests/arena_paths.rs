//! Slugs and folder names of the arena results tree.

use coderig::arena::paths::MAX_SLUG_LEN;
use coderig::arena::{battle_slug, contestant_dir, sanitize_slug, BattleType};
use proptest::prelude::*;

#[test]
fn sanitize_slug_table() {
    let long_word = "a".repeat(100);
    let dash_at_cut = format!("{}-b", "a".repeat(63)); // a dash would land at 64
    let dash_before_cut = format!("{} b", "a".repeat(62)); // "-b" fits exactly
    let cases: Vec<(&str, String)> = vec![
        ("", String::new()),
        ("---", String::new()),
        ("!@#$%^&*()", String::new()),
        ("日本語", String::new()),
        ("Hello, World!", "hello-world".into()),
        ("  leading and trailing  ", "leading-and-trailing".into()),
        ("a--b__c  d", "a-b-c-d".into()),
        ("Café Crème", "caf-cr-me".into()), // non-ASCII letters separate
        ("gpt-4o", "gpt-4o".into()),
        ("openai/gpt-4o-mini", "openai-gpt-4o-mini".into()),
        ("Qwen2.5-Coder:32B", "qwen2-5-coder-32b".into()),
        ("ÄBC", "bc".into()),
        ("tab\tnew\nline", "tab-new-line".into()),
        (&long_word, "a".repeat(64)),
        (&dash_at_cut, "a".repeat(63)),
        (&dash_before_cut, format!("{}-b", "a".repeat(62))),
    ];
    for (input, expected) in cases {
        assert_eq!(sanitize_slug(input), expected, "{input:?}");
    }
}

#[test]
fn battle_slug_dates_are_utc() {
    let id = "3F2504E0-4F89-11D3-9A0C-0305E82C3301";
    // (unix ms, expected date)
    let cases: Vec<(i64, &str)> = vec![
        (0, "1970-01-01"),
        (-1, "1969-12-31"),         // one ms before the epoch
        (86_399_999, "1970-01-01"), // last ms of the first day
        (86_400_000, "1970-01-02"),
        (951_782_400_000, "2000-02-29"), // leap day of a /400 year
        (951_868_799_999, "2000-02-29"),
        (951_868_800_000, "2000-03-01"),
        (1_709_164_800_000, "2024-02-29"),
        (1_735_689_599_999, "2024-12-31"), // 23:59:59.999Z on New Year's Eve
        (1_735_689_600_000, "2025-01-01"), // 00:00Z, already Jan 1 in UTC
        (4_107_542_400_000, "2100-03-01"), // 2100 is not a leap year
        (253_402_300_799_999, "9999-12-31"),
        (-62_167_219_200_000, "0000-01-01"),
    ];
    for (ms, date) in cases {
        assert_eq!(
            battle_slug(id, BattleType::Coding, ms).unwrap(),
            format!("{date}-coding-3f2504e0"),
            "{ms}"
        );
    }
    // A local evening in UTC-8 (2024-12-31T20:00-08:00) is already the next day in UTC.
    let evening_in_los_angeles = 1_735_704_000_000;
    assert_eq!(
        battle_slug(id, BattleType::Qa, evening_in_los_angeles).unwrap(),
        "2025-01-01-qa-3f2504e0"
    );
}

#[test]
fn battle_slug_ids_and_errors() {
    let ms = 1_735_689_600_000;
    let ok = [
        ("abcdef12-0000", "abcdef12"),
        ("ab-cd-ef-12-34", "abcdef12"), // dashes anywhere are dropped
        ("ABCDEF1234567890", "abcdef12"),
        ("0123456789abcdef0123456789abcdef", "01234567"),
    ];
    for (id, hex) in ok {
        assert_eq!(
            battle_slug(id, BattleType::Coding, ms).unwrap(),
            format!("2025-01-01-coding-{hex}")
        );
    }
    let bad_ids = [
        "",
        "abc",
        "abcdefg1",
        "----",
        "abcdef1",
        "ab cdef12",
        "äbcdef12",
    ];
    for id in bad_ids {
        let err = battle_slug(id, BattleType::Coding, ms).unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT", "{id:?}");
    }
    for ms in [i64::MIN, i64::MAX, 253_402_300_800_000, -62_167_219_200_001] {
        assert!(battle_slug("abcdef12", BattleType::Qa, ms).is_err(), "{ms}");
    }
}

#[test]
fn contestant_dir_table() {
    let cases = [
        ("claude", "opus", "claude-opus"),
        ("Claude Code", "openai/gpt-4o", "claude-code-openai-gpt-4o"),
        ("aider", "Qwen2.5-Coder:32B", "aider-qwen2-5-coder-32b"),
        ("日本", "llama3", "llama3"),
        ("codex", "!!!", "codex"),
    ];
    for (identity, model, expected) in cases {
        assert_eq!(contestant_dir(identity, model).unwrap(), expected);
    }
    let long = contestant_dir(&"x".repeat(40), &"y".repeat(40)).unwrap();
    assert_eq!(long.len(), MAX_SLUG_LEN);
    assert!(long.starts_with(&"x".repeat(40)) && !long.ends_with('-'));
    assert_eq!(
        contestant_dir("???", "").unwrap_err().code(),
        "INVALID_INPUT"
    );
}

fn is_valid_slug(s: &str) -> bool {
    s.is_empty()
        || (s.split('-').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        }))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sanitize_slug_is_a_slug(s in "\\PC{0,120}|[a-zA-Z0-9 _./:-]{0,120}") {
        let slug = sanitize_slug(&s);
        prop_assert!(is_valid_slug(&slug), "{:?} -> {:?}", s, slug);
        prop_assert!(slug.len() <= MAX_SLUG_LEN);
        // Idempotent: a slug is its own slug.
        prop_assert_eq!(sanitize_slug(&slug), slug.clone());
        // Nothing alphanumeric is lost before the cap.
        let alnum: String = s.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect();
        let kept: String = slug.chars().filter(|c| *c != '-').collect();
        prop_assert!(alnum.starts_with(&kept));
        if slug.len() < MAX_SLUG_LEN - 1 {
            prop_assert_eq!(kept, alnum);
        }
    }
}
