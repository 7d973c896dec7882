//! Benchmarks of finished contestants.

use coderig::arena::{benchmark_line, compute_benchmark, Benchmark, Lane};

/// (started_ms, ended_ms, tokens, lane, expected duration_ms, expected tokens/s)
type Case = (i64, i64, Option<u64>, Lane, u64, Option<f64>);

#[test]
fn compute_benchmark_table() {
    let cases: Vec<Case> = vec![
        (1_000, 3_000, Some(100), Lane::Local, 2_000, Some(50.0)),
        (1_000, 3_000, Some(100), Lane::Cloud, 2_000, None), // cloud: never
        (1_000, 3_000, None, Lane::Local, 2_000, None),      // unknown tokens
        (1_000, 1_000, Some(100), Lane::Local, 0, None),     // zero duration
        (5_000, 1_000, Some(100), Lane::Local, 0, None),     // clock went back: clamped
        (0, 250, Some(0), Lane::Local, 250, Some(0.0)),
        (-500, 500, Some(10), Lane::Local, 1_000, Some(10.0)),
        (i64::MIN, i64::MAX, Some(1), Lane::Cloud, u64::MAX, None), // no overflow
        (i64::MAX, i64::MIN, Some(1), Lane::Local, 0, None),
    ];
    for (started, ended, tokens, lane, duration_ms, tokens_per_sec) in cases {
        assert_eq!(
            compute_benchmark(started, ended, tokens, lane),
            Benchmark {
                duration_ms,
                tokens_per_sec
            },
            "{started}..{ended} {tokens:?} {lane}"
        );
    }
}

#[test]
fn benchmark_line_formats() {
    let local = compute_benchmark(0, 12_345, Some(4_567), Lane::Local);
    assert_eq!(
        benchmark_line(&local, Some(4_567), Lane::Local),
        "lane=local duration=12.35s tokens=4567 tokens_per_sec=369.9"
    );
    let cloud = compute_benchmark(0, 500, None, Lane::Cloud);
    assert_eq!(
        benchmark_line(&cloud, None, Lane::Cloud),
        "lane=cloud duration=0.50s tokens=unknown"
    );
}
