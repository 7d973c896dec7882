//! Benchmarks of one finished contestant.

use super::lane::Lane;
use serde::{Deserialize, Serialize};

/// Wall-clock duration and, where meaningful, throughput of one contestant.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Benchmark {
    /// `ended - started` in milliseconds, never negative (a clock that went
    /// backwards yields 0).
    pub duration_ms: u64,
    /// Output tokens per second; `Some` only for the local lane with known
    /// tokens and a duration above 0 (cloud latency includes queueing and
    /// network time, so its tokens/second would not measure the model).
    pub tokens_per_sec: Option<f64>,
}

/// Duration and tokens/second of a contestant that ran from `started_ms` to
/// `ended_ms` (any epoch, milliseconds) and produced `cost_tokens` tokens.
/// Total: never overflows, never divides by zero.
pub fn compute_benchmark(
    started_ms: i64,
    ended_ms: i64,
    cost_tokens: Option<u64>,
    lane: Lane,
) -> Benchmark {
    let duration_ms = if ended_ms > started_ms {
        // i128 so that extreme timestamps cannot overflow.
        u64::try_from(i128::from(ended_ms) - i128::from(started_ms)).unwrap_or(u64::MAX)
    } else {
        0
    };
    let tokens_per_sec = match (lane, cost_tokens) {
        (Lane::Local, Some(tokens)) if duration_ms > 0 => {
            Some(tokens as f64 / (duration_ms as f64 / 1000.0))
        }
        _ => None,
    };
    Benchmark {
        duration_ms,
        tokens_per_sec,
    }
}

/// A one-line, model-readable summary for the analysis prompts, e.g.
/// `lane=local duration=12.35s tokens=4567 tokens_per_sec=369.8`
/// (`tokens=unknown` when unknown; `tokens_per_sec` only when computed).
pub fn benchmark_line(benchmark: &Benchmark, cost_tokens: Option<u64>, lane: Lane) -> String {
    let mut line = format!(
        "lane={} duration={:.2}s tokens=",
        lane.as_str(),
        benchmark.duration_ms as f64 / 1000.0
    );
    match cost_tokens {
        Some(t) => line.push_str(&t.to_string()),
        None => line.push_str("unknown"),
    }
    if let Some(tps) = benchmark.tokens_per_sec {
        line.push_str(&format!(" tokens_per_sec={tps:.1}"));
    }
    line
}
