//! `locate` beside naive baselines, in the same run:
//!
//! 1. fuzzy: a 20-line needle with two typos in a 10,000-line file, against
//!    scoring every 20-line window with a plain O(n·m) Levenshtein;
//! 2. exact: a unique line in a ~10 MB file, against a byte-by-byte loop and
//!    `str::matches` counting.

use coderig::{locate, MatchKind};
use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;

/// Deterministic code-like lines (a small LCG, no RNG crate needed).
fn code_lines(n: usize, seed: u64) -> Vec<String> {
    let mut state = seed;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as usize
    };
    let verbs = [
        "compute", "load", "store", "parse", "render", "check", "merge",
    ];
    let nouns = [
        "total", "user", "config", "buffer", "index", "result", "node",
    ];
    (0..n)
        .map(|_| {
            let indent = "    ".repeat(next() % 4);
            let v = verbs[next() % verbs.len()];
            let a = nouns[next() % nouns.len()];
            let b = nouns[next() % nouns.len()];
            match next() % 4 {
                0 => format!(
                    "{indent}let {a}_{} = {v}_{b}({a}, {});",
                    next() % 1000,
                    next() % 100
                ),
                1 => format!("{indent}if {a}.{v}() > {} {{", next() % 1000),
                2 => format!("{indent}{b}.{v}_{}(&{a});", next() % 1000),
                _ => format!("{indent}}} // {v} {a} {}", next() % 1000),
            }
        })
        .collect()
}

/// Plain two-row dynamic-programming Levenshtein distance over chars.
fn levenshtein_naive(a: &[char], b: &[char]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Baseline: best 20-line window by normalized Levenshtein similarity.
fn naive_best_window(lines: &[String], needle: &str, k: usize) -> (usize, f64) {
    let nc: Vec<char> = needle.chars().collect();
    let mut best = (0, 0.0);
    for s in 0..=lines.len() - k {
        let wc: Vec<char> = lines[s..s + k].join("\n").chars().collect();
        let d = levenshtein_naive(&nc, &wc);
        let sim = 1.0 - d as f64 / nc.len().max(wc.len()) as f64;
        if sim > best.1 {
            best = (s, sim);
        }
    }
    best
}

fn fuzzy(c: &mut Criterion) {
    let lines = code_lines(10_000, 7);
    let content = lines.join("\n") + "\n";
    let start = 6_000;
    let mut needle_lines: Vec<String> = lines[start..start + 20].to_vec();
    // Two typos on interior lines: a swapped pair and a dropped char.
    let l5: Vec<char> = needle_lines[5].chars().collect();
    let mut l5b = l5.clone();
    l5b.swap(l5.len() - 3, l5.len() - 4);
    needle_lines[5] = l5b.into_iter().collect();
    let cut = needle_lines[12].len() - 2;
    needle_lines[12].remove(cut);
    let needle = needle_lines.join("\n");
    let m = locate(&content, &needle);
    assert_eq!(m.kind, MatchKind::Fuzzy, "{m:?}");
    assert_eq!(naive_best_window(&lines, &needle, 20).0, start);

    let mut g = c.benchmark_group("locate_fuzzy_20_lines_in_10k");
    g.sample_size(10);
    g.bench_function("coderig_locate", |b| {
        b.iter(|| locate(black_box(&content), black_box(&needle)))
    });
    g.bench_function("naive_every_window_levenshtein", |b| {
        b.iter(|| naive_best_window(black_box(&lines), black_box(&needle), 20))
    });
    g.finish();
}

fn exact(c: &mut Criterion) {
    let mut lines = code_lines(300_000, 11);
    let at = lines.len() * 9 / 10;
    lines[at] = "    let unique_marker = finalize_everything(config, 4242);".to_string();
    let content = lines.join("\n") + "\n";
    let needle = lines[at].trim_start().to_string();
    assert!(content.len() >= 9_000_000, "{}", content.len());
    let m = locate(&content, &needle);
    assert_eq!(m.kind, MatchKind::Exact);

    let mut g = c.benchmark_group("locate_exact_10mb");
    g.sample_size(10);
    g.throughput(criterion::Throughput::Bytes(content.len() as u64));
    g.bench_function("coderig_locate", |b| {
        b.iter(|| locate(black_box(&content), black_box(&needle)))
    });
    g.bench_function("naive_byte_loop", |b| {
        b.iter(|| {
            let (h, n) = (black_box(content.as_bytes()), black_box(needle.as_bytes()));
            let mut count = 0usize;
            for i in 0..=h.len() - n.len() {
                let mut j = 0;
                while j < n.len() && h[i + j] == n[j] {
                    j += 1;
                }
                count += usize::from(j == n.len());
            }
            count
        })
    });
    g.bench_function("str_matches_count", |b| {
        b.iter(|| {
            black_box(&content)
                .matches(black_box(needle.as_str()))
                .count()
        })
    });
    g.finish();
}

criterion_group!(benches, fuzzy, exact);
criterion_main!(benches);
