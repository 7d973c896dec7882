//! The oracle (feature `runtime`, Unix): a contestant's patch applied to a
//! *fresh* checkout of the battle's base, its `repro` and `suite` commands
//! run there with a timeout, and the evidence recorded.
//!
//! # Where the commands run
//!
//! Every run makes its own checkout with [`Workspace::create`]: a coderig
//! worktree of the project at the base commit, under the workspace's
//! app-owned root, named `oracle-<8 random hex>/checkout` (so on a
//! throwaway branch `coderig/<hex>/checkout`). It is never the agent's
//! worktree and never the user's tree; the user's index, files, `HEAD` and
//! branches are not touched, and the only traces in the repository (the
//! worktree's registration and its throwaway branch) are removed with the
//! checkout ([`Workspace::remove`] with [`RemoveProof::Discard`]).
//!
//! The checkout is removed whatever happens: after the commands, when the
//! patch does not apply, on an error, on cancel, and when the future is
//! dropped midway (a guard removes it from a thread of its own, and a
//! creation still under way when the future is dropped removes what it
//! created itself). After a crash, [`Workspace::sweep`] reports a leftover
//! checkout as `live`; [`is_oracle_checkout`] tells it from a contestant's
//! worktree so the caller removes it ([`Workspace::unlock`], then
//! [`Workspace::remove`] with [`RemoveProof::Discard`]).
//!
//! # How a command runs
//!
//! `sh -c` with the command string, preceded by a line `exec 2>&1` so
//! stdout and stderr share one pipe and their output interleaves exactly as
//! written; cwd is the checkout, stdin `/dev/null`, the environment the
//! parent's minus the variables that would point git elsewhere
//! ([`SCRUBBED_ENV`]). It runs through [`run_process`]: its own process
//! group, the spec's wall-clock timeout, then SIGTERM to the whole group
//! and SIGKILL after [`KILL_GRACE`]; the group is SIGKILLed after the
//! leader exits too, so nothing the command started survives it.
//!
//! `repro` runs first, then `suite` (each when configured; the suite runs
//! even when the repro fails, so both are evidence). Neither runs when the
//! patch does not apply.
//!
//! # The sandbox
//!
//! Each command runs in a sandbox of its own ([`oracle_policy`], prepared
//! with [`Confinement::prepare`] under the mode the caller passes — the
//! registry's `[sandbox] mode` in the arena runner):
//!
//! - **writes** only inside the fresh checkout and the command's private
//!   temporary directory (`TMPDIR`, removed after the command); the user's
//!   home, the project's own tree and everything else are read-only;
//! - **credential stores** under `$HOME` ([`crate::sandbox::CREDENTIAL_STORES`])
//!   unreadable;
//! - **network** as the spec's [`OracleSpec::network`] says: `deny` by
//!   default (a network namespace of its own: the host's listeners,
//!   loopback included, unreachable), `allow` to opt in;
//! - **processes** in a PID namespace of their own, so the timeout (or a
//!   cancel, or the leader's exit) ends the whole tree, a `setsid` daemon
//!   included.
//!
//! What was enforced is recorded with the command's evidence
//! ([`CommandEvidence::sandbox`]: the policy, the Landlock ABI, what `auto`
//! left out). Under `enforce`, a kernel that cannot confine the command is a
//! refusal: the run ends with an `unavailable` error (details `missing`:
//! what the kernel lacks, `command`: `repro` or `suite`) before the
//! command starts, and the checkout is removed, as for any other oracle
//! error; the arena records it as the contestant's (or the base run's)
//! oracle error. `off` runs the commands unconfined and says so in the
//! report.
//!
//! # Output tail
//!
//! [`CommandEvidence::output_tail`] is the last [`OUTPUT_TAIL_BYTES`] of the
//! combined output, cut on a char boundary (invalid UTF-8 replaced, `\r\n`
//! read as `\n`). A single line longer than the bound keeps its first
//! [`OUTPUT_TAIL_BYTES`] only. A command that timed out or died of a signal
//! ends its tail with a line `[coderig: ...]` saying so, inside the bound.

use super::evidence::{BaseRun, CommandEvidence, Evidence};
use super::spec::OracleSpec;
use crate::agent::process::{run_process, Ended, Limits, ProcessSpec, Tail};
use crate::error::Error;
use crate::sandbox::{home_dir, Confinement, SandboxMode, SandboxPolicy};
use crate::workspace::{Base, Patch, RemoveProof, Workspace, Worktree, WorktreeName};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How much of a command's output [`CommandEvidence::output_tail`] keeps:
/// 8 KiB.
pub const OUTPUT_TAIL_BYTES: usize = 8 << 10;

/// The time between SIGTERM and SIGKILL to a command's process group when it
/// times out or is cancelled.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

/// The start of the battle slug of every oracle checkout: `oracle-<8 hex>`.
/// A battle's own slug starts with its date, so the two never meet.
pub const ORACLE_SLUG_PREFIX: &str = "oracle-";

/// The contestant part of an oracle checkout's name.
const CHECKOUT_DIR: &str = "checkout";

/// Inherited variables removed from a command's environment: each would
/// point git in the checkout at another repository, index or tree.
pub const SCRUBBED_ENV: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
];

/// What one oracle run found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct OracleRun {
    /// The patch was applied to the checkout (true for an empty patch;
    /// false for the base run, which has no patch).
    pub patch_applied: bool,
    /// Why the patch was not applied, when it was refused: it does not
    /// apply cleanly, it is malformed, a path escapes the checkout, or it
    /// was taken against another commit. The commands did not run then.
    pub apply_error: Option<String>,
    /// The repro command's evidence, when it is configured and ran.
    pub repro: Option<CommandEvidence>,
    /// The suite's evidence, when it is configured and ran.
    pub suite: Option<CommandEvidence>,
}

impl OracleRun {
    /// The contestant's [`Evidence`] ([`super::evidence::tier`] grades it):
    /// a refused patch's reason becomes its `error`.
    pub fn into_evidence(self) -> Evidence {
        Evidence {
            repro: self.repro,
            suite: self.suite,
            patch_applied: self.patch_applied,
            error: self
                .apply_error
                .map(|reason| format!("the patch does not apply to the base: {reason}")),
        }
    }

    /// The battle's [`BaseRun`] (from [`run_base`]).
    pub fn into_base_run(self) -> BaseRun {
        BaseRun {
            repro: self.repro,
            suite: self.suite,
            error: self.apply_error,
        }
    }
}

/// True when `worktree` is an oracle checkout (named `oracle-<hex>/checkout`)
/// rather than a contestant's worktree: what a caller of
/// [`Workspace::sweep`] needs to remove a checkout a crash left behind.
pub fn is_oracle_checkout(name: &WorktreeName) -> bool {
    name.battle_slug().starts_with(ORACLE_SLUG_PREFIX) && name.contestant_dir() == CHECKOUT_DIR
}

/// True when `error` is the oracle's "cancelled" error (kind `conflict`,
/// detail `cancelled: true`).
pub fn is_cancelled(error: &Error) -> bool {
    error.details().get("cancelled") == Some(&serde_json::Value::Bool(true))
}

fn cancelled() -> Error {
    Error::conflict("the oracle run was cancelled").with_detail("cancelled", true)
}

/// The sandbox policy of an oracle command run in `checkout`: the strict
/// base of [`SandboxPolicy::new`] for this process's home (`$HOME`: its
/// credential stores hidden, nothing writable but the private temp dir),
/// plus `checkout` writable and the spec's network.
pub fn oracle_policy(checkout: &Path, spec: &OracleSpec) -> SandboxPolicy {
    SandboxPolicy::new(home_dir().as_deref())
        .with_writable(checkout)
        .with_network(spec.network.clone())
}

/// The base run: [`run_oracle`] without a patch, once per battle (a repro
/// that already passes on the base is reported, not trusted).
pub async fn run_base(
    workspace: Arc<dyn Workspace>,
    project: &Path,
    base_commit: &str,
    spec: &OracleSpec,
    sandbox: SandboxMode,
    cancel: &CancellationToken,
) -> Result<OracleRun, Error> {
    run_oracle(workspace, project, base_commit, None, spec, sandbox, cancel).await
}

/// Makes a fresh checkout of `base_commit` of the repository `project`,
/// applies `patch` there (with [`Workspace::apply`]: new, binary, renamed
/// files as `diff` produced them), runs `spec`'s repro then suite, and
/// removes the checkout (see the module docs for every guarantee).
///
/// A patch that is refused (`conflict` or `invalid_input` from `apply`, or
/// a patch taken against another commit) is evidence, not an error:
/// `patch_applied: false` with `apply_error`, no command run.
///
/// Each command runs sandboxed under `sandbox` (see the module docs); its
/// evidence carries the report of what was enforced.
///
/// Errors: `invalid_input` for a bad spec (a zero timeout, an empty
/// command) or a bad project or base (as [`Workspace::create`] refuses
/// them); `unavailable` when `sh` cannot be started, or when `sandbox` is
/// `enforce` and the kernel cannot confine the command (details `missing`
/// and `command`; the command does not start); `io` and the like
/// when the checkout cannot be made or removed (a removal that fails
/// carries the checkout's path in the detail `checkout`; sweep retries it);
/// the cancelled error ([`is_cancelled`], kind `conflict`) when `cancel`
/// fires, after the running command's process group is killed and the
/// checkout removed.
pub async fn run_oracle(
    workspace: Arc<dyn Workspace>,
    project: &Path,
    base_commit: &str,
    patch: Option<&Patch>,
    spec: &OracleSpec,
    sandbox: SandboxMode,
    cancel: &CancellationToken,
) -> Result<OracleRun, Error> {
    check_spec(spec)?;
    if cancel.is_cancelled() {
        return Err(cancelled());
    }
    let checkout = Checkout::new(workspace.clone());
    let result = async {
        let worktree = checkout.create(project, base_commit).await?;
        let mut run = OracleRun {
            patch_applied: false,
            apply_error: None,
            repro: None,
            suite: None,
        };
        if let Some(patch) = patch {
            if cancel.is_cancelled() {
                return Err(cancelled());
            }
            match apply(&workspace, patch, &worktree).await? {
                Ok(()) => run.patch_applied = true,
                Err(reason) => {
                    run.apply_error = Some(reason);
                    return Ok(run);
                }
            }
        }
        for (name, command, slot) in [
            ("repro", &spec.repro, &mut run.repro),
            ("suite", &spec.suite, &mut run.suite),
        ] {
            if let Some(command) = command {
                let policy = oracle_policy(&worktree.path, spec);
                let what = Run {
                    name,
                    command,
                    cwd: &worktree.path,
                    timeout: spec.timeout,
                };
                *slot = Some(run_command(what, &policy, sandbox, cancel).await?);
            }
        }
        Ok(run)
    }
    .await;
    let removed = checkout.remove().await;
    match (result, removed) {
        (Err(error), _) => Err(error),
        (Ok(_), Err(error)) => Err(error),
        (Ok(run), Ok(())) => Ok(run),
    }
}

fn check_spec(spec: &OracleSpec) -> Result<(), Error> {
    if spec.timeout.is_zero() {
        return Err(Error::invalid_at(
            "oracle.timeout",
            "the oracle's timeout must be more than zero",
        ));
    }
    for (path, command) in [("oracle.repro", &spec.repro), ("oracle.suite", &spec.suite)] {
        if command.as_deref().is_some_and(|c| c.trim().is_empty()) {
            return Err(Error::invalid_at(
                path,
                "an oracle command must not be empty (leave it out instead)",
            ));
        }
    }
    Ok(())
}

/// Applies `patch` to the checkout: `Ok(Err(reason))` when it is refused.
async fn apply(
    workspace: &Arc<dyn Workspace>,
    patch: &Patch,
    worktree: &Worktree,
) -> Result<Result<(), String>, Error> {
    if let Some(taken) = patch.base_commit() {
        if taken != worktree.base_commit {
            return Ok(Err(format!(
                "the patch was taken against {taken}, not the base {}",
                worktree.base_commit
            )));
        }
    }
    let ws = workspace.clone();
    let patch = patch.clone();
    let target = worktree.path.clone();
    let applied = blocking(move || ws.apply(&patch, &target)).await?;
    match applied {
        Ok(()) => Ok(Ok(())),
        Err(e)
            if matches!(
                e.kind(),
                crate::ErrorKind::Conflict | crate::ErrorKind::InvalidInput
            ) =>
        {
            Ok(Err(e.message().to_owned()))
        }
        Err(e) => Err(e),
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Error> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::internal(format!("an oracle workspace call panicked: {e}")))
}

/// One command to run: its name in the spec (`repro`, `suite`), the shell
/// text, the checkout and the timeout.
struct Run<'a> {
    name: &'a str,
    command: &'a str,
    cwd: &'a Path,
    timeout: Duration,
}

/// The sandbox of one command, or the refusal that ends the oracle run.
fn confine(run: &Run<'_>, policy: &SandboxPolicy, mode: SandboxMode) -> Result<Confinement, Error> {
    Confinement::prepare(policy, mode).map_err(|e| {
        let refused = Error::new(
            e.kind(),
            format!(
                "the oracle's {} command cannot run sandboxed: {}",
                run.name,
                e.message()
            ),
        );
        e.details()
            .iter()
            .fold(refused, |error, (key, value)| {
                error.with_detail(key, value.clone())
            })
            .with_detail("command", run.name)
    })
}

async fn run_command(
    run: Run<'_>,
    policy: &SandboxPolicy,
    mode: SandboxMode,
    cancel: &CancellationToken,
) -> Result<CommandEvidence, Error> {
    if cancel.is_cancelled() {
        return Err(cancelled());
    }
    let Run {
        command,
        cwd,
        timeout,
        ..
    } = run;
    let confinement = Arc::new(confine(&run, policy, mode)?);
    let report = confinement.report().clone();
    let process = ProcessSpec {
        program: PathBuf::from("sh"),
        args: vec!["-c".to_owned(), format!("exec 2>&1\n{command}")],
        cwd: Some(cwd.to_path_buf()),
        env: Default::default(),
        env_remove: SCRUBBED_ENV.iter().map(|s| (*s).to_owned()).collect(),
        sandbox: Some(confinement),
    };
    let limits = Limits {
        timeout: Some(timeout),
        idle_timeout: None,
        max_line_bytes: OUTPUT_TAIL_BYTES,
        stderr_tail_bytes: OUTPUT_TAIL_BYTES,
        kill_grace: KILL_GRACE,
    };
    let mut tail = Tail::new(OUTPUT_TAIL_BYTES);
    let started = Instant::now();
    let exit = run_process(&process, &limits, cancel, |line| {
        tail.push(line.as_bytes());
        tail.push(b"\n");
        true
    })
    .await
    .map_err(|e| {
        let kind = if e.kind() == std::io::ErrorKind::NotFound {
            crate::ErrorKind::Unavailable
        } else {
            crate::ErrorKind::Io
        };
        Error::new(kind, format!("the oracle cannot run its command: {e}"))
    })?;
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    // Nothing should reach the original stderr after `exec 2>&1`, but a
    // shell that fails before it would write there.
    if !exit.stderr_tail.is_empty() {
        tail.push(exit.stderr_tail.as_bytes());
    }
    let timed_out = exit.ended == Ended::Timeout;
    match exit.ended {
        Ended::Cancelled => return Err(cancelled()),
        Ended::Timeout => tail.push(
            format!(
                "[coderig: timed out after {:.1} s; its process group was killed]\n",
                timeout.as_secs_f64()
            )
            .as_bytes(),
        ),
        Ended::Exited | Ended::Idle => {
            if let (None, Some(signal)) = (exit.exit_code, exit.signal) {
                tail.push(format!("[coderig: ended by signal {signal}]\n").as_bytes());
            }
        }
    }
    Ok(CommandEvidence {
        exit_code: exit.exit_code,
        duration_ms,
        timed_out,
        output_tail: tail.into_string(),
        sandbox: Some(report),
    })
}

/// The checkout's worktree, shared by the run, the blocking creation and
/// the drop guard: whoever finds `abandoned` set with a worktree in hand
/// removes it.
#[derive(Default)]
struct Slot {
    worktree: Option<Worktree>,
    abandoned: bool,
}

/// Owns the oracle's checkout: [`Checkout::remove`] at the end, or the
/// drop guard when the future is dropped midway.
struct Checkout {
    workspace: Arc<dyn Workspace>,
    slot: Arc<Mutex<Slot>>,
}

/// A fresh `oracle-<8 hex>` slug: the process id, the time and a counter,
/// hashed (unique per process by the counter, across processes by the pid
/// and the time; a collision is refused by `create` and retried).
fn fresh_slug() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = format!(
        "{}:{nanos}:{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    format!(
        "{ORACLE_SLUG_PREFIX}{:08x}",
        crate::xxhash32(seed.as_bytes(), 0x0AC1E)
    )
}

fn discard(workspace: &dyn Workspace, worktree: &Worktree) -> Result<(), Error> {
    workspace.unlock(worktree)?;
    workspace
        .remove(worktree, &RemoveProof::Discard)
        .map(|_| ())
}

impl Checkout {
    fn new(workspace: Arc<dyn Workspace>) -> Checkout {
        Checkout {
            workspace,
            slot: Arc::new(Mutex::new(Slot::default())),
        }
    }

    async fn create(&self, project: &Path, base_commit: &str) -> Result<Worktree, Error> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let name = WorktreeName::new(&fresh_slug(), CHECKOUT_DIR)?;
            let ws = self.workspace.clone();
            let slot = self.slot.clone();
            let project = project.to_path_buf();
            let base = Base::Ref(base_commit.to_owned());
            let created = blocking(move || {
                let worktree = ws.create(&project, &base, &name)?;
                let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
                if slot.abandoned {
                    drop(slot);
                    discard(ws.as_ref(), &worktree)?;
                    return Err(cancelled());
                }
                slot.worktree = Some(worktree.clone());
                Ok(worktree)
            })
            .await?;
            match created {
                // Another run drew the same name (or a stale one is there).
                Err(e)
                    if e.kind() == crate::ErrorKind::Conflict
                        && !is_cancelled(&e)
                        && attempt < 3 =>
                {
                    continue
                }
                other => return other,
            }
        }
    }

    async fn remove(&self) -> Result<(), Error> {
        let Some(worktree) = self.take() else {
            return Ok(());
        };
        let ws = self.workspace.clone();
        let path = worktree.path.clone();
        blocking(move || discard(ws.as_ref(), &worktree))
            .await?
            .map_err(|e| {
                Error::new(
                    e.kind(),
                    format!(
                        "the oracle checkout {} could not be removed: {}",
                        path.display(),
                        e.message()
                    ),
                )
                .with_detail("checkout", path.to_string_lossy().as_ref())
            })
    }

    /// Marks the checkout abandoned and takes its worktree, if any.
    fn take(&self) -> Option<Worktree> {
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        slot.abandoned = true;
        slot.worktree.take()
    }
}

impl Drop for Checkout {
    fn drop(&mut self) {
        if let Some(worktree) = self.take() {
            // Dropped midway (the caller's future was dropped): remove it off
            // the async threads. The command's process group is already
            // killed by run_process's own guard.
            let ws = self.workspace.clone();
            let _ = std::thread::Builder::new()
                .name("coderig-oracle-cleanup".to_owned())
                .spawn(move || discard(ws.as_ref(), &worktree));
        }
    }
}
