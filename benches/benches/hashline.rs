//! `hashline::format` on 100,000 code-like lines, beside a naive baseline
//! (`lines()` + per-line `String`s + `format!` + `join`) in the same run.

use coderig::edit::hashline;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;

/// 100,000 lines of plausible source: indentation, blank lines, braces,
/// comments, a little non-ASCII. Deterministic (no RNG needed).
fn corpus() -> String {
    let shapes = [
        "use std::collections::HashMap;",
        "",
        "/// Computes the total of the given values.",
        "pub fn total(values: &[u64]) -> u64 {",
        "    let mut sum = 0;",
        "    for v in values {",
        "        sum += v; // accumulate",
        "    }",
        "    sum",
        "}",
        "",
        "const GREETING: &str = \"héllo wörld\";",
        "    if let Some(x) = map.get(&key) {",
        "        return Err(Error::new(format!(\"bad key {key}\")));",
        "    }",
        "};",
    ];
    let mut s = String::new();
    for i in 0..100_000 {
        s.push_str(shapes[i % shapes.len()]);
        if i % 7 == 0 {
            s.push_str("  ");
        }
        s.push('\n');
    }
    s
}

const NAIVE_ALPHABET: [char; 16] = [
    'Z', 'P', 'M', 'Q', 'V', 'R', 'W', 'S', 'N', 'K', 'T', 'X', 'J', 'B', 'Y', 'H',
];

/// The obvious implementation: allocate a cleaned copy of every line, check
/// for letters with `chars()`, `format!` each output line, then join.
fn naive_format(content: &str) -> String {
    content
        .split('\n')
        .enumerate()
        .map(|(i, line)| {
            let cleaned: String = line.replace('\r', "").trim_end().to_string();
            let seed = if cleaned.chars().any(char::is_alphanumeric) {
                0
            } else {
                (i + 1) as u32
            };
            let h = coderig::xxhash32(cleaned.as_bytes(), seed) & 0xFF;
            let hash: String = [
                NAIVE_ALPHABET[(h >> 4) as usize],
                NAIVE_ALPHABET[(h & 15) as usize],
            ]
            .iter()
            .collect();
            format!("{}#{}|{}", i + 1, hash, line.trim_end_matches('\r'))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn bench_format(c: &mut Criterion) {
    let content = corpus();
    // Same output on this ASCII-and-Latin corpus, so the comparison is fair.
    assert_eq!(naive_format(&content), hashline::format(&content));
    let mut group = c.benchmark_group("hashline_format_100k_lines");
    group.throughput(Throughput::Bytes(content.len() as u64));
    group.bench_function("coderig", |b| {
        b.iter(|| hashline::format(black_box(&content)))
    });
    group.bench_function("naive_baseline", |b| {
        b.iter(|| naive_format(black_box(&content)))
    });
    group.finish();
}

criterion_group!(benches, bench_format);
criterion_main!(benches);
