//! The sandbox around every process coderig starts: CLI agents, flow
//! `command` steps, oracle runs (and the native agent's `run` tool).
//!
//! # The policy, in a few lines
//!
//! - **Writes** only under the policy's writable roots and a private
//!   temporary directory (`TMPDIR`, removed afterwards). Renames, hard
//!   links, truncation and writes through symlinks or `/proc/self/root`
//!   that would reach outside are refused by the kernel (Landlock, ABI 3+).
//! - **Reads** everywhere except the credential stores under the home
//!   directory ([`CREDENTIAL_STORES`]: `~/.ssh`, `~/.aws`, `~/.gnupg`,
//!   `~/.config/gcloud`, …) unless a policy lists one as readable. Their
//!   names can be listed; their contents cannot be read.
//! - **Network** `deny` (a network namespace of its own: the host's
//!   loopback listeners and every other host unreachable, its own loopback
//!   up), `allow`, or `loopback:PORTS` (TCP connects only to those ports,
//!   by Landlock ABI 4+).
//! - **Processes** in a PID namespace whose init dies with the process that
//!   started it, so nothing the program starts — a `setsid` double-forked
//!   daemon included — outlives its turn, step or oracle run, even when
//!   coderig is killed with SIGKILL. The program keeps no capability.
//! - **Limits** (optional): open files, processes, file size, address space.
//!
//! Modes ([`SandboxMode`]): `enforce` (default) refuses with `unavailable`
//! what the kernel cannot confine; `auto` runs with what it can and says
//! what it could not in the [`SandboxReport`]; `off` confines nothing.
//! Every outcome records its report.
//!
//! The pure part ([`SandboxPolicy`], [`SandboxOverrides`], [`SandboxReport`])
//! always compiles; [`Confinement`] (feature `runtime`) applies a policy,
//! on Linux only: elsewhere `enforce` refuses and `auto` runs unconfined.

mod policy;

pub use policy::{
    Enforcer, NetworkPolicy, ResourceLimits, SandboxConfig, SandboxMode, SandboxOverrides,
    SandboxPolicy, SandboxReport, CREDENTIAL_STORES,
};

#[cfg(feature = "runtime")]
mod worktree;
#[cfg(feature = "runtime")]
pub use worktree::{find_worktree, WorktreeGit};

#[cfg(all(feature = "runtime", target_os = "linux"))]
mod child;
#[cfg(all(feature = "runtime", target_os = "linux"))]
mod confine;
#[cfg(all(feature = "runtime", target_os = "linux"))]
mod grants;
#[cfg(all(feature = "runtime", target_os = "linux"))]
pub mod kernel;

#[cfg(all(feature = "runtime", target_os = "linux"))]
pub use confine::Confinement;

#[cfg(all(feature = "runtime", not(target_os = "linux")))]
mod elsewhere;
#[cfg(all(feature = "runtime", not(target_os = "linux")))]
pub use elsewhere::Confinement;

/// The home directory whose credential stores a default policy hides:
/// `$HOME` of this process.
pub fn home_dir() -> Option<std::path::PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(std::path::PathBuf::from)
}
