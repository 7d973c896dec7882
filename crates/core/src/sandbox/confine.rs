//! A policy turned into what the kernel enforces on one process tree
//! (Linux): the private temp dir, the Landlock ruleset and the plan the
//! child follows before `exec`.

use super::child::{self, ChildPlan};
use super::kernel::{self, KernelSupport};
use super::policy::{Enforcer, NetworkPolicy, SandboxMode, SandboxPolicy, SandboxReport};
use crate::error::Error;
use landlock::{
    Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};
use std::os::fd::{AsRawFd, OwnedFd};
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

        let hidden = effective_hidden(policy);
        let ruleset = if landlock_ok {
            let ports = match (&policy.network, ports_ok) {
                (NetworkPolicy::Ports(ports), true) => Some(ports.as_slice()),
                _ => None,
            };
            let fd = build_ruleset(&support, policy, &writable, &hidden, ports).map_err(|e| {
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
            hidden: hidden.into_iter().filter(|h| h.exists()).collect(),
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
            limits: policy.limits,
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

/// The hidden paths minus those a `readable` entry re-opens, made absolute
/// through their nearest existing ancestor (so a symlinked home is split
/// where the files really are).
fn effective_hidden(policy: &SandboxPolicy) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = policy
        .hidden
        .iter()
        .filter(|h| !policy.readable.iter().any(|r| h.starts_with(r)))
        .map(|h| real_path(h))
        .collect();
    out.sort();
    out.dedup();
    out
}

fn real_path(path: &Path) -> PathBuf {
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => real_path(parent).join(name),
        _ => path.to_path_buf(),
    }
}

/// The read grants that make everything under `root` readable except the
/// `hidden` paths: whole subtrees (`full`), and the directories split to
/// leave a hidden path out, which keep only the right to be listed
/// (`listed`). Symlinks get no rule: Landlock checks where they lead.
/// Pure but for `list`, which reads a directory.
pub(crate) fn read_grants(
    root: &Path,
    hidden: &[PathBuf],
    list: &mut dyn FnMut(&Path) -> Vec<(PathBuf, bool)>,
    full: &mut Vec<PathBuf>,
    listed: &mut Vec<PathBuf>,
) {
    if hidden.iter().any(|h| h == root) {
        return;
    }
    if !hidden.iter().any(|h| h.starts_with(root)) {
        full.push(root.to_path_buf());
        return;
    }
    listed.push(root.to_path_buf());
    for (child, is_symlink) in list(root) {
        if !is_symlink {
            read_grants(&child, hidden, list, full, listed);
        }
    }
}

fn list_dir(dir: &Path) -> Vec<(PathBuf, bool)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| {
            let symlink = e.file_type().map(|t| t.is_symlink()).unwrap_or(true);
            (e.path(), symlink)
        })
        .collect()
}

fn build_ruleset(
    support: &KernelSupport,
    policy: &SandboxPolicy,
    writable: &[PathBuf],
    hidden: &[PathBuf],
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

    let (mut full, mut listed) = (Vec::new(), Vec::new());
    for root in &policy.read_roots {
        read_grants(
            &real_path(root),
            hidden,
            &mut list_dir,
            &mut full,
            &mut listed,
        );
    }
    full.extend(policy.readable.iter().filter(|p| p.exists()).cloned());
    let mut grants: Vec<(&Path, landlock::BitFlags<AccessFs>)> = Vec::new();
    grants.extend(full.iter().map(|p| (p.as_path(), read)));
    grants.extend(
        listed
            .iter()
            .map(|p| (p.as_path(), AccessFs::ReadDir.into())),
    );
    grants.extend(writable.iter().map(|p| (p.as_path(), all)));
    grants.extend(DEVICE_FILES.iter().map(|p| (Path::new(p), file)));
    grants.extend(DEVICE_DIRS.iter().map(|p| (Path::new(p), all)));
    for (path, access) in grants {
        let Ok(fd) = PathFd::new(path) else {
            // Gone since it was listed, or unreadable to us: no rule.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_grants_split_only_the_ancestors_of_hidden_paths() {
        // A fake tree: / has home and usr; home has .ssh, .bashrc, a
        // symlink, and .config with gcloud and nvim.
        let tree: &[(&str, &[(&str, bool)])] = &[
            ("/", &[("/home", false), ("/usr", false)]),
            (
                "/home",
                &[
                    ("/home/.ssh", false),
                    ("/home/.bashrc", false),
                    ("/home/keys", true),
                    ("/home/.config", false),
                ],
            ),
            (
                "/home/.config",
                &[
                    ("/home/.config/gcloud", false),
                    ("/home/.config/nvim", false),
                ],
            ),
        ];
        let mut list = |dir: &Path| -> Vec<(PathBuf, bool)> {
            tree.iter()
                .find(|(d, _)| Path::new(d) == dir)
                .map(|(_, kids)| kids.iter().map(|(p, s)| (PathBuf::from(p), *s)).collect())
                .unwrap_or_default()
        };
        let hidden = vec![
            PathBuf::from("/home/.ssh"),
            PathBuf::from("/home/.config/gcloud"),
        ];
        let (mut full, mut listed) = (Vec::new(), Vec::new());
        read_grants(Path::new("/"), &hidden, &mut list, &mut full, &mut listed);
        let s = |v: &[PathBuf]| {
            v.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(s(&full), ["/home/.bashrc", "/home/.config/nvim", "/usr"]);
        assert_eq!(s(&listed), ["/", "/home", "/home/.config"]);

        // Nothing hidden: one rule for the whole tree.
        let (mut full, mut listed) = (Vec::new(), Vec::new());
        read_grants(Path::new("/"), &[], &mut list, &mut full, &mut listed);
        assert_eq!(s(&full), ["/"]);
        assert!(listed.is_empty());
    }

    #[test]
    fn readable_entries_reopen_hidden_paths() {
        let mut policy = SandboxPolicy::new(Some(Path::new("/nonexistent-home")));
        policy.readable.push("/nonexistent-home/.ssh".into());
        let hidden = effective_hidden(&policy);
        assert!(!hidden.contains(&PathBuf::from("/nonexistent-home/.ssh")));
        assert!(hidden.contains(&PathBuf::from("/nonexistent-home/.aws")));
    }
}
