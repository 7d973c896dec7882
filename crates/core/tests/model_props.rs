//! Properties of the model decisions: the matchers never panic, matching is
//! on token / word boundaries, answers do not depend on input order, and
//! canonical forms round-trip.

use coderig::model::{
    classify_error, match_model, normalize_model, parse_retry_after, ErrorClass, FallbackChain,
    FallbackEntry, MODEL_SEPARATORS,
};
use proptest::prelude::*;
use std::time::{Duration, UNIX_EPOCH};

/// Words that the classifier's phrases are made of, plus noise, so random
/// messages hit the rules often.
const VOCAB: &[&str] = &[
    "rate",
    "limit",
    "quota",
    "exceeded",
    "model",
    "not",
    "found",
    "context",
    "length",
    "503",
    "429",
    "5031",
    "timeout",
    "timed",
    "out",
    "billing",
    "overloaded",
    "per",
    "minute",
    "bad",
    "request",
    "the",
    "x",
    "does",
    "exist",
    "gpt",
    "4",
    "unavailable",
    "connection",
    "reset",
    "invalid",
    "api",
    "key",
    "余额不足",
    "error",
    "line",
];

fn message() -> impl Strategy<Value = Vec<&'static str>> {
    prop::collection::vec(prop::sample::select(VOCAB), 0..12)
}

fn join(words: &[&str], seps: &[char]) -> String {
    let mut s = String::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            s.push(seps[i % seps.len()]);
        }
        s.push_str(w);
    }
    s
}

/// Every separator mapped to `/`, wrapped in `/`: a necessary condition of
/// whole-token containment.
fn slashed(s: &str) -> String {
    let mapped: String = s
        .chars()
        .map(|c| {
            if MODEL_SEPARATORS.contains(&c) {
                '/'
            } else {
                c
            }
        })
        .collect();
    format!("/{mapped}/")
}

fn model_id() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            prop::sample::select(
                &[
                    "gpt", "4", "4o", "40", "qwen3", "coder", "mini", "claude", "opus", "1", "2025",
                ][..],
            ),
            prop::sample::select(&['-', '_', '.', '/', ':'][..]),
        ),
        1..5,
    )
    .prop_map(|parts| {
        let mut s = String::new();
        for (i, (tok, sep)) in parts.iter().enumerate() {
            if i > 0 {
                s.push(*sep);
            }
            s.push_str(tok);
        }
        s
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn classify_never_panics(name in proptest::option::of(".{0,40}"), msg in proptest::option::of(".{0,200}"), status in proptest::option::of(any::<u16>())) {
        let _ = classify_error(name.as_deref(), msg.as_deref(), status);
    }

    #[test]
    fn status_codes_inside_other_words_never_match(
        code in prop::sample::select(&["408", "429", "502", "503", "504", "529"][..]),
        pre in "[a-z0-9]{0,3}",
        suf in "[a-z0-9]{0,3}",
    ) {
        prop_assume!(!pre.is_empty() || !suf.is_empty());
        let glued = format!("error on line {pre}{code}{suf}");
        prop_assert_eq!(classify_error(None, Some(&glued), None), ErrorClass::Fatal, "{}", glued);
        let alone = format!("error on line{}{code}{}", " ", ")");
        prop_assert_eq!(classify_error(None, Some(&alone), None), ErrorClass::Retry, "{}", alone);
    }

    #[test]
    fn separators_and_case_do_not_change_the_class(
        words in message(),
        flips in prop::collection::vec(any::<bool>(), 12),
        status in proptest::option::of(prop::sample::select(&[400u16, 404, 429, 500, 503][..])),
    ) {
        let base = classify_error(None, Some(&join(&words, &['_'])), status);
        for seps in [&['-'][..], &['.'][..], &['_', '-', ':'][..]] {
            prop_assert_eq!(classify_error(None, Some(&join(&words, seps)), status), base);
        }
        let cased: Vec<String> = words
            .iter()
            .zip(&flips)
            .map(|(w, &up)| if up { w.to_ascii_uppercase() } else { w.to_string() })
            .collect();
        let cased: Vec<&str> = cased.iter().map(String::as_str).collect();
        prop_assert_eq!(classify_error(None, Some(&join(&cased, &['_'])), status), base);
    }

    #[test]
    fn match_model_never_panics(target in ".{0,30}", available in prop::collection::vec(".{0,30}", 0..6), provider in ".{0,8}") {
        let _ = match_model(&target, &available, &[provider.as_str()]);
        let _ = match_model(&target, &available, &[]);
        let n = normalize_model(&target);
        prop_assert_eq!(normalize_model(&n), n);
    }

    #[test]
    fn match_model_answers_from_the_list_on_token_boundaries_in_any_order(
        target in model_id(),
        mut available in prop::collection::vec(model_id(), 0..8),
        rotate in 0usize..8,
    ) {
        let got = match_model(&target, &available, &[]);
        if let Some(m) = &got {
            prop_assert!(available.contains(m));
            prop_assert!(
                slashed(&normalize_model(m)).contains(&slashed(&normalize_model(&target))),
                "{} is not a whole-token match of {}", m, target
            );
        }
        if !available.is_empty() {
            let k = rotate % available.len();
            available.rotate_left(k);
        }
        available.reverse();
        prop_assert_eq!(match_model(&target, &available, &[]), got);
    }

    #[test]
    fn a_longer_token_never_matches(target in model_id(), extra in "[a-z0-9]{1,3}") {
        let longer = format!("{target}{extra}");
        prop_assert_eq!(match_model(&target, [longer.as_str()], &[]), None);
        let prefixed = format!("{extra}{target}");
        prop_assert_eq!(match_model(&target, [prefixed.as_str()], &[]), None);
    }

    #[test]
    fn fallback_parse_never_panics_and_canonical_forms_round_trip(texts in prop::collection::vec(".{0,24}", 0..5)) {
        if let Ok(chain) = FallbackChain::parse(&texts) {
            let canonical: Vec<String> = chain.entries().iter().map(FallbackEntry::to_string).collect();
            prop_assert_eq!(FallbackChain::parse(&canonical).unwrap(), chain);
        }
    }

    #[test]
    fn fallback_walk_only_moves_forward_and_ends(ids in prop::collection::btree_set(model_id(), 1..6), classes in prop::collection::vec(prop::sample::select(ErrorClass::ALL), 0..20)) {
        let chain = FallbackChain::parse(&ids).unwrap();
        let mut at = Some(0);
        for class in classes {
            let Some(current) = at else { break };
            at = chain.next(current, class);
            if let Some(next) = at {
                prop_assert!(next < chain.len());
                prop_assert_eq!(next, if class == ErrorClass::Retry { current } else { current + 1 });
            }
        }
    }

    #[test]
    fn retry_after_never_panics_and_seconds_round_trip(value in ".{0,40}", secs in any::<u32>(), now in any::<u32>()) {
        let now = UNIX_EPOCH + Duration::from_secs(now.into());
        let _ = parse_retry_after(&value, now);
        prop_assert_eq!(parse_retry_after(&secs.to_string(), now), Some(Duration::from_secs(secs.into())));
    }

    #[test]
    fn retry_after_reads_the_dates_it_is_given(date in 0i64..8_000_000_000, now in 0i64..8_000_000_000) {
        let now_t = UNIX_EPOCH + Duration::from_secs(now as u64);
        let expected = Some(Duration::from_secs((date - now).max(0) as u64));
        prop_assert_eq!(parse_retry_after(&imf_fixdate(date), now_t), expected);
        prop_assert_eq!(parse_retry_after(&asctime(date), now_t), expected);
    }
}

/// Civil date of days since 1970-01-01 (H. Hinnant's `civil_from_days`).
fn civil(days: i64) -> (i64, usize, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m as usize, d)
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]; // 1970-01-01 was a Thursday

fn parts(t: i64) -> (&'static str, i64, &'static str, i64, i64, i64, i64) {
    let days = t.div_euclid(86_400);
    let s = t.rem_euclid(86_400);
    let (y, m, d) = civil(days);
    (
        DAYS[days.rem_euclid(7) as usize],
        d,
        MONTHS[m - 1],
        y,
        s / 3600,
        s / 60 % 60,
        s % 60,
    )
}

fn imf_fixdate(t: i64) -> String {
    let (wd, d, mon, y, h, mi, s) = parts(t);
    format!("{wd}, {d:02} {mon} {y} {h:02}:{mi:02}:{s:02} GMT")
}

fn asctime(t: i64) -> String {
    let (wd, d, mon, y, h, mi, s) = parts(t);
    format!("{wd} {mon} {d:>2} {h:02}:{mi:02}:{s:02} {y}")
}
