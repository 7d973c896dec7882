//! The retry backoff: pure, so a restarted driver waits exactly what the
//! one before it would have.

use std::time::Duration;

/// The seed of a retry's jitter: the same run, step, iteration and attempt
/// always wait the same time (a restarted driver agrees with the one
/// before it).
pub(crate) fn seed(run_id: &str, step_id: &str, iteration: u32, attempt: u32) -> u64 {
    let key = format!("{run_id}/{step_id}/{iteration}/{attempt}");
    let lo = xxhash_rust::xxh32::xxh32(key.as_bytes(), 0) as u64;
    let hi = xxhash_rust::xxh32::xxh32(key.as_bytes(), 0x9e37_79b9) as u64;
    (hi << 32) | lo
}

/// The wait before the attempt after `failures` failed ones: `initial ·
/// multiplier^(failures−1)` capped at `max`, then a seeded jitter of ±10 %
/// (never above `max`).
pub fn retry_delay(
    initial: Duration,
    multiplier: f64,
    max: Duration,
    failures: u32,
    seed: u64,
) -> Duration {
    let m = if multiplier.is_finite() && multiplier >= 1.0 {
        multiplier
    } else {
        1.0
    };
    let exp = failures.saturating_sub(1).min(1024) as i32;
    let base = initial.as_secs_f64() * m.powi(exp);
    let cap = max.max(initial).as_secs_f64();
    let base = if base.is_finite() { base.min(cap) } else { cap };
    // A value in [-1, 1) from the seed's top 53 bits.
    let u = (seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
    let jittered = (base * (1.0 + 0.1 * u)).clamp(0.0, cap);
    Duration::from_secs_f64(jittered)
}
