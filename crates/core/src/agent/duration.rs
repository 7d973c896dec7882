//! Durations as configs spell them (pure): a number of seconds (`90`,
//! `1.5`) or a string with a unit (`"90s"`, `"20m"`, `"500ms"`, `"2h"`,
//! `"30d"`).

use std::time::Duration;

/// Parses `"500ms"`, `"90s"`, `"20m"`, `"2h"`, `"30d"`, `"1.5s"` or a bare number of
/// seconds (`"90"`). Whitespace around the number and the unit is allowed;
/// the unit is case-insensitive.
///
/// Errors (a message naming the accepted forms) for an empty string, an
/// unknown unit, a negative, non-finite or absurd (> 100 years) value.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "ms" => 0.001,
        "" | "s" | "sec" | "secs" => 1.0,
        "m" | "min" | "mins" => 60.0,
        "h" | "hr" | "hrs" => 3600.0,
        "d" | "day" | "days" => 86_400.0,
        _ => return Err(bad(text)),
    };
    let value: f64 = number.trim().parse().map_err(|_| bad(text))?;
    seconds(value * scale).ok_or_else(|| bad(text))
}

/// A number of seconds as a duration; `None` when negative, not finite or
/// more than 100 years.
pub fn seconds(value: f64) -> Option<Duration> {
    (value.is_finite() && (0.0..=3.2e9).contains(&value)).then(|| Duration::from_secs_f64(value))
}

fn bad(text: &str) -> String {
    format!(
        "bad duration {text:?}: expected a number of seconds or a number with a unit (\"500ms\", \"90s\", \"20m\", \"2h\")"
    )
}

/// serde's `deserialize_with` for an optional duration: absent or `null`
/// is `None`, a number is seconds, a string is [`parse_duration`]'s form;
/// another type is refused naming it (`invalid type: a boolean, ...`).
pub fn deserialize_opt<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Duration>, D::Error> {
    use serde::de::Error as _;
    use serde::Deserialize;
    use serde_json::Value;
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n.as_f64().and_then(seconds).map(Some).ok_or_else(|| {
            D::Error::custom(format!(
                "bad duration {n}: expected a non-negative number of seconds"
            ))
        }),
        Some(Value::String(t)) => parse_duration(&t).map(Some).map_err(D::Error::custom),
        Some(other) => Err(D::Error::custom(format!(
            "invalid type: {}, expected a number of seconds or a duration string (\"90s\")",
            crate::json::describe(&other)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_by_table() {
        let ok = [
            ("500ms", 500),
            ("90s", 90_000),
            ("20m", 1_200_000),
            ("2h", 7_200_000),
            ("30d", 2_592_000_000),
            ("1 day", 86_400_000),
            ("1.5s", 1_500),
            ("90", 90_000),
            (" 3 S ", 3_000),
            ("0", 0),
        ];
        for (text, ms) in ok {
            assert_eq!(
                parse_duration(text).unwrap(),
                Duration::from_millis(ms),
                "{text}"
            );
        }
        for text in [
            "",
            "s",
            "ten s",
            "5 parsecs",
            "-1s",
            "1e400",
            "1..2s",
            "99999999999h",
        ] {
            let err = parse_duration(text).unwrap_err();
            assert!(err.contains("\"90s\""), "{text}: {err}");
        }
    }
}
