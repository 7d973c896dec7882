//! Integers as JSON Schema reads them: `3` and `3.0` are the same integer.
//!
//! serde refuses `3.0` for a `u32`; schema-driven clients (and Python's
//! `json.dumps(3.0)`) send it anyway, so every integer field of the contract
//! goes through these, which accept an integral float and refuse a fraction
//! or an out-of-range number with the range in the message.

use serde::de::{self, Deserializer, Visitor};
use std::fmt;
use std::marker::PhantomData;

/// An unsigned integer type these deserializers produce.
pub(crate) trait Unsigned: Copy + TryFrom<u64> {
    const MAX: u64;
}
impl Unsigned for u32 {
    const MAX: u64 = u32::MAX as u64;
}
impl Unsigned for u64 {
    const MAX: u64 = u64::MAX;
}
impl Unsigned for usize {
    const MAX: u64 = usize::MAX as u64;
}

struct UnsignedVisitor<T>(PhantomData<T>);

fn out_of_range<T: Unsigned, E: de::Error>(got: impl fmt::Display) -> E {
    E::custom(format!(
        "must be an integer from 0 to {}, got {got}",
        T::MAX
    ))
}

impl<T: Unsigned> Visitor<'_> for UnsignedVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an integer from 0 to {}", T::MAX)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        if v > T::MAX {
            return Err(out_of_range::<T, E>(v));
        }
        T::try_from(v).map_err(|_| out_of_range::<T, E>(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        match u64::try_from(v) {
            Ok(v) => self.visit_u64(v),
            Err(_) => Err(out_of_range::<T, E>(v)),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        // 2^64 itself is not a u64; every integral f64 below it is.
        if v.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&v) {
            self.visit_u64(v as u64)
        } else {
            Err(out_of_range::<T, E>(v))
        }
    }
}

fn unsigned<'de, T: Unsigned, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
    d.deserialize_any(UnsignedVisitor(PhantomData))
}

fn optional<'de, T: Unsigned, D: Deserializer<'de>>(d: D) -> Result<Option<T>, D::Error> {
    struct Opt<T>(PhantomData<T>);
    impl<'de, T: Unsigned> Visitor<'de> for Opt<T> {
        type Value = Option<T>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "null or an integer from 0 to {}", T::MAX)
        }
        fn visit_none<E: de::Error>(self) -> Result<Option<T>, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Option<T>, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<T>, D::Error> {
            unsigned(d).map(Some)
        }
    }
    d.deserialize_option(Opt(PhantomData))
}

/// A `u32`.
pub(crate) fn u32<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    unsigned(d)
}

/// A `u32` whose `null` means "not given": the field's default, 0.
pub(crate) fn u32_or_zero<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    optional::<u32, D>(d).map(Option::unwrap_or_default)
}

/// An optional `u32` (`null` is `None`).
pub(crate) fn opt_u32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    optional(d)
}

/// An optional `u64` (`null` is `None`).
pub(crate) fn opt_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    optional(d)
}

/// An optional `usize` (`null` is `None`).
pub(crate) fn opt_usize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    optional(d)
}
