//! A policy turned into what the kernel enforces on one process tree
//! (Linux): the private temp dir, the Landlock ruleset and the plan the
//! child follows before `exec`.

use super::child::{self, ChildPlan};
use super::grants::{self, ReadGrants};
use super::kernel::{self, KernelSupport};
use super::policy::{Enforcer, NetworkPolicy, SandboxMode, SandboxPolicy, SandboxReport};
use crate::error::Error;
use landlock::{
    Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

/// Landlock ABI below which writes cannot be confined: ABI 2 adds
/// rename/link across directories (REFER), ABI 3 truncation.
const MIN_FS_ABI: u32 = 3;
/// Landlock ABI that filters TCP ports.
const MIN_NET_ABI: u32 = 4;

/// Device files every confined process may read and write.
const DEVICE_FILES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
];
/// Device directories writable in full: terminals and POSIX shared memory
/// (Python's multiprocessing needs it).
const DEVICE_DIRS: &[&str] = &["/dev/pts", "/dev/shm"];

/// A policy ready to apply to one process tree. Holds the tree's private
/// temporary directory (removed on drop) and the Landlock ruleset.
#[derive(Debug)]
pub struct Confinement {
    report: SandboxReport,
    tmp: Option<tempfile::TempDir>,
    plan: Option<ChildPlan>,
    /// Keeps the ruleset's descriptor open until the spawn.
    _ruleset: Option<OwnedFd>,
}

impl PartialEq for Confinement {
    fn eq(&self, other: &Self) -> bool {
        self.report == other.report
    }
}
impl Eq for Confinement {}

impl Confinement {
    /// Prepares `policy` under `mode`. `enforce` refuses with
    /// `unavailable`, naming what is missing, when the kernel cannot
    /// enforce every part; `auto` leaves those parts out and lists them in
    /// the report; `off` prepares nothing. Errors are `unavailable`, or
    /// `io` when the temp dir cannot be made.
    pub fn prepare(policy: &SandboxPolicy, mode: SandboxMode) -> Result<Confinement, Error> {
        if mode == SandboxMode::Off {
            return Ok(Confinement {
                report: SandboxReport::off(),
                tmp: None,
                plan: None,
                _ruleset: None,
            });
        }
        let support = kernel::support();
        let mut unenforced = Vec::new();
        let mut refuse = |what: String| -> Result<(), Error> {
            if mode == SandboxMode::Enforce {
                Err(Error::unavailable(format!(
                    "the sandbox cannot be enforced: {what}; fix the kernel setting, or set [sandbox] mode = \"auto\" to run with what can be enforced (or \"off\")"
                ))
                .with_detail("missing", what))
            } else {
                unenforced.push(what);
                Ok(())
            }
        };
        let landlock_ok = match &support.landlock_missing {
            Some(why) => {
                refuse(format!("filesystem not confined: {why}"))?;
                false
            }
            None if support.landlock_abi < MIN_FS_ABI => {
                refuse(format!(
                    "filesystem not confined: Landlock ABI {} is older than {MIN_FS_ABI} (Linux 6.2), which rename, link and truncate need",
                    support.landlock_abi
                ))?;
                false
            }
            None => true,
        };
        let userns_ok = match &support.userns_missing {
            Some(why) if policy.isolate_processes || policy.network == NetworkPolicy::Deny => {
                let what = match (policy.isolate_processes, &policy.network) {
                    (true, NetworkPolicy::Deny) => "process tree and network not isolated",
                    (true, _) => "process tree not isolated",
                    _ => "network not isolated",
                };
                refuse(format!("{what}: {why}"))?;
                false
            }
            Some(_) => false,
            None => true,
        };
        if let (Some(why), Some(_)) = (&support.userns_missing, policy.limits.tmp_size) {
            refuse(format!("temp dir size not limited: {why}"))?;
        }
        let ports_ok = match &policy.network {
            NetworkPolicy::Ports(_) if !landlock_ok || support.landlock_abi < MIN_NET_ABI => {
                refuse(format!(
                    "network ports not filtered: Landlock ABI {} is older than {MIN_NET_ABI} (Linux 6.7)",
                    support.landlock_abi
                ))?;
                false
            }
            NetworkPolicy::Ports(_) => true,
            _ => false,
        };

        let tmp = tempfile::Builder::new()
            .prefix("coderig-sandbox-")
            .tempdir()
            .map_err(|e| Error::io(format!("cannot create the sandbox's temp dir: {e}")))?;
        let mut writable = vec![tmp.path().to_path_buf()];
        writable.extend(policy.writable.iter().cloned());

        let mut plan = ChildPlan::new();
        let isolate = userns_ok && policy.isolate_processes;
        let netns = userns_ok && policy.network == NetworkPolicy::Deny;
        if isolate || netns {
            plan.unshare = libc::CLONE_NEWUSER;
        }
        if isolate {
            plan.unshare |= libc::CLONE_NEWPID;
            plan.isolate = true;
        }
        if netns {
            plan.unshare |= libc::CLONE_NEWNET;
            plan.loopback_up = true;
        }
        let l = policy.limits;
        plan.rlimits = [l.open_files, l.processes, l.file_size, l.address_space];
        let mut limits = policy.limits;
        match l.tmp_size {
            Some(size) if userns_ok => {
                let access = if landlock_ok {
                    AccessFs::from_all(ABI::from(support.landlock_abi as i32)).bits()
                } else {
                    0
                };
                plan.mount_tmpfs(tmp.path(), size, access)
                    .map_err(Error::invalid_input)?;
            }
            Some(_) => limits.tmp_size = None,
            None => {}
        }

        let grants = if landlock_ok {
            Some(grants::read_grants(policy))
        } else {
            None
        };
        let ruleset = if let Some(grants) = &grants {
            let ports = match (&policy.network, ports_ok) {
                (NetworkPolicy::Ports(ports), true) => Some(ports.as_slice()),
                _ => None,
            };
            let fd = build_ruleset(&support, grants, &writable, ports).map_err(|e| {
                Error::unavailable(format!("cannot build the Landlock ruleset: {e}"))
            })?;
            plan.ruleset_fd = fd.as_raw_fd();
            Some(fd)
        } else {
            None
        };
        let report = SandboxReport {
            mode,
            confined: unenforced.is_empty(),
            landlock_abi: landlock_ok.then_some(support.landlock_abi),
            filesystem: if landlock_ok {
                Enforcer::Landlock
            } else {
                Enforcer::None
            },
            writable,
            hidden: match &grants {
                Some(grants) => grants.hidden_existing.clone(),
                None => Vec::new(),
            },
            network: policy.network.name(),
            network_enforced_by: match &policy.network {
                NetworkPolicy::Deny if netns => Enforcer::Namespace,
                NetworkPolicy::Ports(_) if ports_ok => Enforcer::Landlock,
                _ => Enforcer::None,
            },
            processes: if isolate {
                Enforcer::Namespace
            } else {
                Enforcer::None
            },
            limits,
            unenforced,
        };
        Ok(Confinement {
            report,
            tmp: Some(tmp),
            plan: Some(plan),
            _ruleset: ruleset,
        })
    }

    /// What is enforced.
    pub fn report(&self) -> &SandboxReport {
        &self.report
    }

    /// The tree's private temporary directory (`TMPDIR`), when confined.
    pub fn tmp_dir(&self) -> Option<&Path> {
        self.tmp.as_ref().map(|t| t.path())
    }

    /// Applies the confinement to a command the caller spawns: sets
    /// `TMPDIR` (and `TMP`, `TEMP`) to the private temp dir and adds a
    /// `pre_exec` step that confines the child (after the caller's own
    /// steps). Keep `self` alive until the process has exited: dropping it
    /// removes the temp dir. With processes isolated, the program runs as
    /// pid 2 of its own PID namespace under a small init; the child the
    /// caller gets is the scaffolding that mirrors the program's exit code
    /// or signal, and that dies (taking the tree with it) when the thread
    /// that spawned it dies. [`crate::agent::process::run_process`] does
    /// this for every process coderig runs.
    pub fn apply(&self, cmd: &mut std::process::Command) {
        if let Some(tmp) = self.tmp_dir() {
            for var in ["TMPDIR", "TMP", "TEMP"] {
                cmd.env(var, tmp);
            }
        }
        if let Some(mut plan) = self.plan {
            plan.parent = std::process::id() as libc::pid_t;
            #[allow(unsafe_code)]
            // SAFETY: `child::enter` makes only async-signal-safe calls on
            // the plain data of `plan` (see its module docs); the ruleset
            // descriptor it uses stays open in `self` until the spawn returns.
            unsafe {
                cmd.pre_exec(move || child::enter(&plan));
            }
        }
    }
}

fn build_ruleset(
    support: &KernelSupport,
    grants: &ReadGrants,
    writable: &[PathBuf],
    ports: Option<&[u16]>,
) -> Result<OwnedFd, String> {
    let abi = ABI::from(support.landlock_abi as i32);
    let all = AccessFs::from_all(abi);
    let read = AccessFs::from_read(abi);
    let file = AccessFs::from_file(abi);
    let e = |e: landlock::RulesetError| e.to_string();
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .map_err(e)?;
    if ports.is_some() {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(e)?;
    }
    if support.landlock_abi >= 6 {
        ruleset = ruleset
            .scope(Scope::AbstractUnixSocket | Scope::Signal)
            .map_err(e)?;
    }
    let mut created = ruleset.create().map_err(e)?;

    for (fd, is_dir, grant) in &grants.rules {
        let access = grant.access(read);
        let access = if *is_dir { access } else { access & file };
        created = created
            .add_rule(PathBeneath::new(fd.as_fd(), access))
            .map_err(e)?;
    }
    let extra = writable
        .iter()
        .map(|p| (p.as_path(), all))
        .chain(DEVICE_FILES.iter().map(|p| (Path::new(p), file)))
        .chain(DEVICE_DIRS.iter().map(|p| (Path::new(p), all)));
    for (path, access) in extra {
        let Ok(fd) = PathFd::new(path) else {
            // Gone, or not openable by us: no rule.
            continue;
        };
        let access = if path.is_dir() { access } else { access & file };
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|err| format!("{}: {err}", path.display()))?;
    }
    if let Some(ports) = ports {
        for &port in ports {
            created = created
                .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
                .map_err(e)?;
        }
        // Binding an ephemeral port (a client's own socket, a test's own
        // server on port 0) stays possible.
        created = created
            .add_rule(NetPort::new(0, AccessNet::BindTcp))
            .map_err(e)?;
    }
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or_else(|| "the kernel returned no ruleset".to_owned())
}
