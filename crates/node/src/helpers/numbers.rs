//! JS numbers as exact integers: a number that must be an integer in a
//! range is refused with the core's message, never rounded or wrapped.

use serde::de::{self, Deserializer};
use serde::Deserialize;

/// `Number.MAX_SAFE_INTEGER`: every integer up to it is exact in an `f64`.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// A JS number that must be an integer in `MIN..=MAX` (capped at
/// [`MAX_SAFE_INTEGER`], beyond which a JS number is not exact). The
/// messages are the core's: "must be an integer from 0 to 4294967295, got
/// -1".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Uint<const MIN: u64, const MAX: u64>(pub u64);

/// A `u32` (counts, retries, seeds, iterations).
pub type U32 = Uint<0, { u32::MAX as u64 }>;
/// A `usize` or `u64` within the safe range (capacities, token counts).
pub type Count = Uint<0, { u64::MAX }>;
/// A 1-based line number.
pub type LineNo = Uint<1, { u32::MAX as u64 }>;

impl<const MIN: u64, const MAX: u64> Uint<MIN, MAX> {
    const TOP: u64 = if MAX < MAX_SAFE_INTEGER {
        MAX
    } else {
        MAX_SAFE_INTEGER
    };

    /// As a `u32` (exact when `MAX` fits; it saturates otherwise).
    pub fn as_u32(self) -> u32 {
        u32::try_from(self.0).unwrap_or(u32::MAX)
    }

    /// As a `usize` (exact: the addon is built for 64-bit targets).
    pub fn as_usize(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }
}

impl<'de, const MIN: u64, const MAX: u64> Deserialize<'de> for Uint<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Integral values arrive as integers (see [`number`]); a float
        // here is a fraction or beyond 2^64.
        let n = serde_json::Number::deserialize(d)?;
        match n.as_u64() {
            Some(v) if (MIN..=Self::TOP).contains(&v) => Ok(Uint(v)),
            _ => Err(de::Error::custom(format!(
                "must be an integer from {MIN} to {}, got {n}",
                Self::TOP
            ))),
        }
    }
}

/// A JS number that must be an integer within `±(2^53 − 1)` (timestamps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Int(pub i64);

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        const TOP: i64 = MAX_SAFE_INTEGER as i64;
        let n = serde_json::Number::deserialize(d)?;
        match n.as_i64() {
            Some(v) if (-TOP..=TOP).contains(&v) => Ok(Int(v)),
            _ => Err(de::Error::custom(format!(
                "must be an integer from {} to {TOP}, got {n}",
                -TOP
            ))),
        }
    }
}

/// A count, offset or line number as a JS number. A V8 string holds fewer
/// than 2^30 UTF-16 units, so every value derived from one fits;
/// saturating keeps the conversion total all the same.
pub fn js_count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::super::args::decode_named;
    use super::super::error::message;
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn numbers_are_taken_exactly_or_refused_with_the_core_message() {
        let u32_cases: Vec<(Value, Result<u64, &str>)> = vec![
            (json!(0), Ok(0)),
            (json!(7), Ok(7)),
            (json!(4294967295u64), Ok(u64::from(u32::MAX))),
            (
                json!(4294967296u64),
                Err("`n`: must be an integer from 0 to 4294967295, got 4294967296"),
            ),
            (
                json!(-1),
                Err("`n`: must be an integer from 0 to 4294967295, got -1"),
            ),
            (
                json!(1.5),
                Err("`n`: must be an integer from 0 to 4294967295, got 1.5"),
            ),
            (
                json!("3"),
                Err("`n`: invalid type: string \"3\", expected a JSON number"),
            ),
            (
                Value::Null,
                Err("`n`: invalid type: null, expected a JSON number"),
            ),
        ];
        for (value, expected) in u32_cases {
            let got = decode_named::<U32>("n", value.clone())
                .map(|n| n.0)
                .map_err(message);
            assert_eq!(got, expected.map_err(str::to_owned), "{value}");
        }
        let safe = MAX_SAFE_INTEGER;
        assert_eq!(
            decode_named::<Count>("n", json!(safe)).map(|n| n.0).ok(),
            Some(safe)
        );
        assert_eq!(
            decode_named::<Count>("n", json!(9007199254740992u64))
                .map_err(message)
                .unwrap_err(),
            "`n`: must be an integer from 0 to 9007199254740991, got 9007199254740992"
        );
        assert_eq!(
            decode_named::<LineNo>("line_no", json!(0))
                .map_err(message)
                .unwrap_err(),
            "`line_no`: must be an integer from 1 to 4294967295, got 0"
        );
        for (value, expected) in [
            (json!(-5), Some(-5)),
            (json!(1_700_000_000_000u64), Some(1_700_000_000_000)),
            (json!(0.5), None),
            (json!(-9007199254740992i64), None),
        ] {
            assert_eq!(
                decode_named::<Int>("t", value.clone()).map(|n| n.0).ok(),
                expected,
                "{value}"
            );
        }
    }

    #[test]
    fn counts_saturate_instead_of_wrapping() {
        assert_eq!(js_count(7), 7);
        assert_eq!(js_count(usize::MAX), u32::MAX);
    }
}
