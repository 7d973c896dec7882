//! `xxhash32`.

use crate::errors::to_js_error;
use coderig::EditError;
use napi::bindgen_prelude::{Buffer, Either};
use napi::Env;
use napi_derive::napi;

/// xxHash32 of `data` (a string is hashed as UTF-8, a Buffer as is) with
/// `seed` (default 0). A seed that is not an integer in `0..=4294967295`
/// throws an `Error` with `code` `INVALID_INPUT`.
#[napi]
pub fn xxhash32(env: Env, data: Either<String, Buffer>, seed: Option<f64>) -> napi::Result<u32> {
    let seed = match seed {
        None => 0,
        Some(seed) => seed_from_number(seed).map_err(|e| to_js_error(&env, e))?,
    };
    let bytes: &[u8] = match &data {
        Either::A(text) => text.as_bytes(),
        Either::B(buffer) => buffer,
    };
    Ok(coderig::xxhash32(bytes, seed))
}

/// A JS number as a `u32` seed, refusing instead of wrapping or truncating.
fn seed_from_number(seed: f64) -> Result<u32, EditError> {
    if seed.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&seed) {
        // In range and integral, so the cast is exact.
        Ok(seed as u32)
    } else {
        Err(EditError::invalid(format!(
            "seed must be an integer in 0..=4294967295, got {seed}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_are_taken_exactly_or_refused() {
        for (input, expected) in [
            (0.0, Some(0)),
            (7.0, Some(7)),
            (4294967295.0, Some(u32::MAX)),
            (-0.0, Some(0)),
        ] {
            assert_eq!(seed_from_number(input).ok(), expected, "{input}");
        }
        for input in [
            -1.0,
            4294967296.0,
            1.5,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            let refused = seed_from_number(input).unwrap_err();
            assert_eq!(refused.code(), "INVALID_INPUT", "{input}");
        }
    }
}
