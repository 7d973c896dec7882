//! Driving a random DAG to completion: the incremental `Scheduler`
//! (O(out-degree) per event) against the naive loop that calls the pure
//! `ready_steps` after every event (O(flow) per event, so quadratic overall).
//!
//! The DAG is seeded and fixed-degree: step `i > 0` depends on 1–3 distinct
//! earlier steps chosen uniformly. Both drivers dispatch every ready step at
//! once and complete them in FIFO order, so they do the same sequence of
//! events; each run asserts that every step completed.

use coderig::flow::{ready_steps, Flow, Scheduler, SchedulerState, Step, StepKind};
use criterion::{criterion_group, BatchSize, BenchmarkId, Criterion, Throughput};
use std::collections::VecDeque;
use std::hint::black_box;
use std::time::Duration;

/// splitmix64: a tiny seeded generator, enough to make the benchmark input
/// reproducible without tying the bench to a `rand` API version.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn random_dag(n: usize, seed: u64) -> Flow {
    let mut rng = SplitMix(seed);
    let steps = (0..n)
        .map(|i| {
            let mut deps: Vec<usize> = Vec::new();
            if i > 0 {
                let degree = 1 + rng.below(3);
                for _ in 0..degree {
                    let d = rng.below(i);
                    if !deps.contains(&d) {
                        deps.push(d);
                    }
                }
            }
            Step::new(format!("s{i}"), StepKind::Code)
                .deps(deps.into_iter().map(|d| format!("s{d}")))
        })
        .collect();
    Flow::new(steps)
}

fn drive_scheduler(flow: Flow) -> usize {
    let n = flow.steps.len();
    let mut sch = Scheduler::new(flow).expect("the generated DAG is valid");
    let mut queue: VecDeque<String> = sch.start().expect("fresh scheduler").into();
    let mut completed = 0;
    while let Some(id) = queue.pop_front() {
        queue.extend(sch.complete(&id).expect("dispatched step"));
        completed += 1;
    }
    assert_eq!(completed, n);
    completed
}

fn drive_naive(flow: &Flow) -> usize {
    let mut st = SchedulerState::new();
    let mut queue: VecDeque<String> = VecDeque::new();
    let dispatch = |st: &mut SchedulerState, queue: &mut VecDeque<String>| {
        for id in ready_steps(flow, st) {
            st.in_flight.insert(id.clone());
            queue.push_back(id);
        }
    };
    dispatch(&mut st, &mut queue);
    let mut completed = 0;
    while let Some(id) = queue.pop_front() {
        st.in_flight.remove(&id);
        st.done.insert(id);
        completed += 1;
        dispatch(&mut st, &mut queue);
    }
    assert_eq!(completed, flow.steps.len());
    completed
}

fn sizes(var: &str, default: &[usize]) -> Vec<usize> {
    std::env::var(var)
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| default.to_vec())
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("drive_dag_to_completion");
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(5));
    for n in sizes("SCHED_BENCH_SIZES", &[10_000, 30_000, 100_000]) {
        let flow = random_dag(n, 42);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("scheduler", n), &flow, |b, flow| {
            b.iter_batched(
                || flow.clone(),
                |f| black_box(drive_scheduler(f)),
                BatchSize::LargeInput,
            )
        });
    }
    // The naive loop is quadratic: about a minute per run at 10,000 steps on
    // the reference machine, hours at 100,000. Criterion's ten samples are
    // taken on smaller flows; `NAIVE_ONCE=10000` times single runs instead.
    for n in sizes("NAIVE_BENCH_SIZES", &[1_000, 2_000, 4_000]) {
        let flow = random_dag(n, 42);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(
            BenchmarkId::new("naive_ready_steps", n),
            &flow,
            |b, flow| b.iter(|| black_box(drive_naive(flow))),
        );
    }
    group.finish();
}

criterion_group!(benches, bench);

/// `NAIVE_ONCE=10000,20000` times one run of each driver per size (too slow
/// for criterion's ten samples on the naive side) and skips criterion.
fn main() {
    if let Ok(list) = std::env::var("NAIVE_ONCE") {
        for n in list
            .split(',')
            .filter_map(|s| s.trim().parse::<usize>().ok())
        {
            let flow = random_dag(n, 42);
            let t = std::time::Instant::now();
            drive_scheduler(flow.clone());
            let incremental = t.elapsed();
            let t = std::time::Instant::now();
            drive_naive(&flow);
            let naive = t.elapsed();
            println!(
                "single run, {n} steps: scheduler {incremental:?}, naive {naive:?}, ratio {:.0}x",
                naive.as_secs_f64() / incremental.as_secs_f64()
            );
        }
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
