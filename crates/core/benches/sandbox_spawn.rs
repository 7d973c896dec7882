//! What the sandbox adds to starting a process: start-to-exit of `true`
//! through the runner that starts every process coderig runs
//! ([`run_process`]), sandboxed beside unsandboxed, in one run.
//!
//! - `plain`: the runner as it was — own process group, parent-death
//!   signal, pipes — no sandbox.
//! - `landlock_only`: the policy prepared (temp dir, Landlock ruleset with
//!   the credential stores split out of the read grants) and applied, with
//!   the network allowed and no process isolation: no namespace.
//! - `no_netns`: Landlock and the user + PID namespace with its init, the
//!   network allowed (no network namespace): what a cloud agent's turn pays.
//! - `full`: the default policy of a command step or oracle run — Landlock,
//!   a user + PID + network namespace with its own loopback up, the init
//!   that takes the tree with it, capabilities dropped.
//!
//! Each iteration prepares its own [`Confinement`] (as every use does) and
//! waits for the program to exit. Goal (issue 15): under 2 ms added or
//! 1.5×, whichever is larger. Results: `benches/RESULTS-sandbox.md`.
//!
//! `cargo bench -p coderig --features runtime --bench sandbox_spawn`

use coderig::agent::process::{run_process, Limits, ProcessSpec};
use coderig::sandbox::{home_dir, Confinement, NetworkPolicy, SandboxMode, SandboxPolicy};
use criterion::{criterion_group, criterion_main, Criterion};
use std::path::Path;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

fn spawn_true(rt: &tokio::runtime::Runtime, policy: Option<&SandboxPolicy>, work: &Path) {
    let sandbox = policy.map(|p| {
        Arc::new(Confinement::prepare(p, SandboxMode::Enforce).expect("the kernel confines"))
    });
    let spec = ProcessSpec {
        program: "true".into(),
        cwd: Some(work.to_path_buf()),
        sandbox,
        ..ProcessSpec::default()
    };
    let exit = rt
        .block_on(run_process(
            &spec,
            &Limits::default(),
            &CancellationToken::new(),
            |_| true,
        ))
        .expect("true starts");
    assert_eq!(exit.exit_code, Some(0));
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let work = tempfile::tempdir().unwrap();
    let home = home_dir();
    let full = SandboxPolicy::new(home.as_deref()).with_writable(work.path());
    let no_netns = full.clone().with_network(NetworkPolicy::Allow);
    let mut landlock_only = no_netns.clone();
    landlock_only.isolate_processes = false;

    let mut group = c.benchmark_group("spawn_true");
    group.bench_function("plain", |b| b.iter(|| spawn_true(&rt, None, work.path())));
    group.bench_function("landlock_only", |b| {
        b.iter(|| spawn_true(&rt, Some(&landlock_only), work.path()))
    });
    group.bench_function("no_netns", |b| {
        b.iter(|| spawn_true(&rt, Some(&no_netns), work.path()))
    });
    group.bench_function("full", |b| {
        b.iter(|| spawn_true(&rt, Some(&full), work.path()))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
