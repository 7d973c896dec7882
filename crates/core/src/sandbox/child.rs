//! The code that runs in the forked child between `fork` and `exec`
//! (Linux): namespaces, the init that keeps the tree from outliving its
//! starter, resource limits, capabilities and Landlock.
//!
//! Everything here runs in a copy of a multi-threaded process, so it makes
//! only async-signal-safe system calls on data prepared before the fork
//! ([`ChildPlan`] is plain `Copy` data): it allocates nothing, takes no
//! lock, and reports failure as a raw OS error.
//!
//! The process tree, when processes are isolated:
//!
//! ```text
//! coderig ── A (group leader; the pid the runner knows; in the new user ns)
//!             └─ B (pid 1 of a new PID ns: reaps, then reports C's status)
//!                 └─ C (pid 2: the program, confined, then exec)
//! ```
//!
//! A dies with coderig (`PR_SET_PDEATHSIG`, set before this code runs), B
//! dies with A (the same), and when B dies the kernel SIGKILLs every
//! process left in its namespace — daemons that double-forked and called
//! `setsid` included. A ignores the terminal signals so that the runner's
//! SIGTERM to the group reaches the program and not the scaffolding; once
//! C ends, A leaves with C's exit code, or dies of C's signal.
#![allow(unsafe_code)]

use std::io;

/// Resources limited by `setrlimit`, in [`ChildPlan::rlimits`].
pub(super) const RLIMITS: [libc::__rlimit_resource_t; 4] = [
    libc::RLIMIT_NOFILE,
    libc::RLIMIT_NPROC,
    libc::RLIMIT_FSIZE,
    libc::RLIMIT_AS,
];

/// Longest `uid_map`/`gid_map` line: "4294967295 4294967295 1\n".
const MAP_LEN: usize = 32;

/// Longest private temp dir path (NUL included) a size-limited temp dir
/// can be mounted on; longer ones are refused when the policy is prepared.
pub(super) const TMP_PATH_LEN: usize = 256;

/// Longest tmpfs option string: "size=18446744073709551615,mode=0700".
const TMPFS_OPTIONS_LEN: usize = 48;

/// `struct landlock_path_beneath_attr` (packed, as the kernel declares it).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// `LANDLOCK_RULE_PATH_BENEATH`.
const RULE_PATH_BENEATH: libc::c_int = 1;

/// What the child does, prepared in the parent.
#[derive(Debug, Clone, Copy)]
pub(super) struct ChildPlan {
    /// `unshare` flags (0: no new namespace).
    pub unshare: libc::c_int,
    pub uid_map: [u8; MAP_LEN],
    pub uid_map_len: usize,
    pub gid_map: [u8; MAP_LEN],
    pub gid_map_len: usize,
    /// Bring `lo` up in the new network namespace.
    pub loopback_up: bool,
    /// Fork an init in the new PID namespace (needs `CLONE_NEWPID`).
    pub isolate: bool,
    /// `Some(limit)` per entry of [`RLIMITS`].
    pub rlimits: [Option<u64>; 4],
    /// The Landlock ruleset to restrict to (-1: none).
    pub ruleset_fd: libc::c_int,
    /// The pid of the process that spawns (0: unknown).
    pub parent: libc::pid_t,
    /// A size-limited temp dir: the NUL-terminated path to mount a tmpfs
    /// on (empty: none), its NUL-terminated options, and the Landlock
    /// rights the mounted directory gets in the ruleset.
    pub tmpfs_path: [u8; TMP_PATH_LEN],
    pub tmpfs_options: [u8; TMPFS_OPTIONS_LEN],
    pub tmpfs_access: u64,
}

impl ChildPlan {
    /// Mounts a tmpfs of `size` bytes on `dir` (the tree's private temp
    /// dir) in the child, and grants it `access` in the ruleset. Errors when
    /// the path is too long for the plan's buffer.
    pub(super) fn mount_tmpfs(
        &mut self,
        dir: &std::path::Path,
        size: u64,
        access: u64,
    ) -> Result<(), String> {
        use std::os::unix::ffi::OsStrExt;
        let path = dir.as_os_str().as_bytes();
        if path.len() + 1 > TMP_PATH_LEN || path.contains(&0) {
            return Err(format!(
                "the temp dir path {} is too long for a size-limited temp dir (at most {} bytes)",
                dir.display(),
                TMP_PATH_LEN - 1
            ));
        }
        self.tmpfs_path[..path.len()].copy_from_slice(path);
        self.tmpfs_path[path.len()] = 0;
        let options = format!("size={size},mode=0700");
        self.tmpfs_options[..options.len()].copy_from_slice(options.as_bytes());
        self.tmpfs_options[options.len()] = 0;
        self.tmpfs_access = access;
        self.unshare |= libc::CLONE_NEWUSER | libc::CLONE_NEWNS;
        Ok(())
    }

    /// A plan that maps the caller's uid and gid to themselves.
    pub(super) fn new() -> Self {
        // SAFETY: geteuid/getegid cannot fail.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let mut plan = ChildPlan {
            unshare: 0,
            uid_map: [0; MAP_LEN],
            uid_map_len: 0,
            gid_map: [0; MAP_LEN],
            gid_map_len: 0,
            loopback_up: false,
            isolate: false,
            rlimits: [None; 4],
            ruleset_fd: -1,
            parent: 0,
            tmpfs_path: [0; TMP_PATH_LEN],
            tmpfs_options: [0; TMPFS_OPTIONS_LEN],
            tmpfs_access: 0,
        };
        plan.uid_map_len = write_map(&mut plan.uid_map, uid);
        plan.gid_map_len = write_map(&mut plan.gid_map, gid);
        plan
    }
}

/// "ID ID 1\n" into `buf`; its length.
fn write_map(buf: &mut [u8; MAP_LEN], id: u32) -> usize {
    let line = format!("{id} {id} 1\n");
    buf[..line.len()].copy_from_slice(line.as_bytes());
    line.len()
}

fn last_error() -> io::Error {
    io::Error::last_os_error()
}

fn check(r: libc::c_int) -> io::Result<()> {
    if r < 0 {
        Err(last_error())
    } else {
        Ok(())
    }
}

/// Runs in the child before `exec`: returns `Ok` in the process that goes
/// on to `exec` the program; the scaffolding processes never return.
pub(super) fn enter(plan: &ChildPlan) -> io::Result<()> {
    if plan.unshare != 0 {
        // SAFETY: unshare, open, write and close are async-signal-safe; the
        // paths are static C strings and the buffers live in `plan`.
        unsafe {
            check(libc::unshare(plan.unshare))?;
            if plan.unshare & libc::CLONE_NEWUSER != 0 {
                write_file(c"/proc/self/setgroups", b"deny")?;
                write_file(c"/proc/self/uid_map", &plan.uid_map[..plan.uid_map_len])?;
                write_file(c"/proc/self/gid_map", &plan.gid_map[..plan.gid_map_len])?;
            }
        }
    }
    if plan.loopback_up {
        loopback_up()?;
    }
    if plan.tmpfs_path[0] != 0 {
        mount_tmpfs(plan)?;
    }
    if plan.isolate {
        // The scaffolding dies with its spawner, whoever spawned it (the
        // runner sets this too); if the spawner is already gone, stop here.
        // SAFETY: prctl and getppid are async-signal-safe.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            if plan.parent != 0 && libc::getppid() != plan.parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
        }
        fork_init()?;
    }
    confine(plan)
}

/// # Safety
/// Async-signal-safe: only open/write/close.
unsafe fn write_file(path: &std::ffi::CStr, data: &[u8]) -> io::Result<()> {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return Err(last_error());
    }
    let n = libc::write(fd, data.as_ptr().cast(), data.len());
    let result = if n == data.len() as isize {
        Ok(())
    } else {
        Err(last_error())
    };
    libc::close(fd);
    result
}

/// Mounts the size-limited tmpfs on the private temp dir (in the mount
/// namespace `enter` created) and adds the mounted directory to the
/// ruleset: the rule made in the parent names the directory under it.
fn mount_tmpfs(plan: &ChildPlan) -> io::Result<()> {
    // SAFETY: mount, open, syscall and close are async-signal-safe; the
    // strings are NUL-terminated buffers in `plan`.
    unsafe {
        let path = plan.tmpfs_path.as_ptr().cast::<libc::c_char>();
        check(libc::mount(
            c"tmpfs".as_ptr(),
            path,
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            plan.tmpfs_options.as_ptr().cast(),
        ))?;
        if plan.ruleset_fd >= 0 {
            let dir = libc::open(path, libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC);
            if dir < 0 {
                return Err(last_error());
            }
            let attr = PathBeneathAttr {
                allowed_access: plan.tmpfs_access,
                parent_fd: dir,
            };
            let r = libc::syscall(
                libc::SYS_landlock_add_rule,
                plan.ruleset_fd,
                RULE_PATH_BENEATH,
                &attr as *const PathBeneathAttr,
                0u32,
            );
            let result = if r == 0 { Ok(()) } else { Err(last_error()) };
            libc::close(dir);
            result?;
        }
    }
    Ok(())
}

/// Sets IFF_UP on `lo` (the new network namespace starts with it down).
fn loopback_up() -> io::Result<()> {
    // SAFETY: socket/ioctl/close on a zeroed ifreq; async-signal-safe.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(last_error());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
            *dst = *src as libc::c_char;
        }
        let mut result = check(libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req));
        if result.is_ok() {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            result = check(libc::ioctl(fd, libc::SIOCSIFFLAGS, &req));
        }
        libc::close(fd);
        result
    }
}

/// Forks B (pid 1 of the new PID namespace), which forks C; returns `Ok`
/// in C only.
fn fork_init() -> io::Result<()> {
    let mut alive = [0 as libc::c_int; 2];
    let mut status = [0 as libc::c_int; 2];
    // SAFETY: pipe2, fork, prctl, poll, close, waitpid, read, write,
    // sigaction, kill and _exit are async-signal-safe; no memory is shared
    // with other threads (they do not exist in this child).
    unsafe {
        check(libc::pipe2(alive.as_mut_ptr(), libc::O_CLOEXEC))?;
        check(libc::pipe2(status.as_mut_ptr(), libc::O_CLOEXEC))?;
        let b = libc::fork();
        if b < 0 {
            return Err(last_error());
        }
        if b == 0 {
            // B: die with A, and make sure A did not die first.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            libc::close(alive[1]);
            libc::close(status[0]);
            let mut poll = libc::pollfd {
                fd: alive[0],
                events: libc::POLLIN,
                revents: 0,
            };
            if libc::poll(&mut poll, 1, 0) != 0 {
                libc::_exit(127);
            }
            let c = libc::fork();
            if c < 0 {
                libc::_exit(127);
            }
            if c == 0 {
                // C: the program. The pipes are close-on-exec; close them now.
                libc::close(alive[0]);
                libc::close(status[1]);
                return Ok(());
            }
            keep_only(&[alive[0], status[1]]);
            init_loop(c, status[1]);
        }
        // A: the scaffolding the runner knows. Terminal signals go to the
        // program (the whole group gets them); A waits for its report.
        libc::close(alive[0]);
        libc::close(status[1]);
        for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
            libc::signal(signal, libc::SIG_IGN);
        }
        keep_only(&[alive[1], status[0]]);
        mirror(b, status[0]);
    }
}

/// Closes every descriptor but `keep` (sorted ascending).
///
/// # Safety
/// Async-signal-safe (close_range, close).
unsafe fn keep_only(keep: &[libc::c_int]) {
    let mut from: libc::c_uint = 0;
    for &fd in keep {
        close_from_to(from, fd as libc::c_uint);
        from = fd as libc::c_uint + 1;
    }
    close_from_to(from, libc::c_uint::MAX);
}

/// Closes `[from, to)`.
unsafe fn close_from_to(from: libc::c_uint, to: libc::c_uint) {
    if from >= to {
        return;
    }
    let r = libc::syscall(libc::SYS_close_range, from, to - 1, 0 as libc::c_uint);
    if r != 0 {
        // Kernels before 5.9: the usual descriptor range.
        for fd in from..to.min(4096) {
            libc::close(fd as libc::c_int);
        }
    }
}

/// B's life: reap every orphan of the namespace until C ends, report C's
/// wait status to A, and exit — which kills what is left in the namespace.
unsafe fn init_loop(c: libc::pid_t, report: libc::c_int) -> ! {
    loop {
        let mut st: libc::c_int = 0;
        let r = libc::waitpid(-1, &mut st, 0);
        if r == c {
            let bytes = st.to_ne_bytes();
            libc::write(report, bytes.as_ptr().cast(), bytes.len());
            libc::_exit(0);
        }
        if r < 0 && *libc::__errno_location() != libc::EINTR {
            libc::_exit(127);
        }
    }
}

/// A's life: wait for C's status from B, wait for B (the namespace is
/// empty once B is reaped), then end the way C ended.
unsafe fn mirror(b: libc::pid_t, report: libc::c_int) -> ! {
    let mut bytes = [0u8; 4];
    let mut got = 0usize;
    while got < 4 {
        let n = libc::read(report, bytes[got..].as_mut_ptr().cast(), 4 - got);
        if n > 0 {
            got += n as usize;
        } else if n == 0 || *libc::__errno_location() != libc::EINTR {
            break;
        }
    }
    let mut b_status: libc::c_int = 0;
    while libc::waitpid(b, &mut b_status, 0) < 0 && *libc::__errno_location() == libc::EINTR {}
    let st = if got == 4 {
        libc::c_int::from_ne_bytes(bytes)
    } else {
        b_status
    };
    if libc::WIFEXITED(st) {
        libc::_exit(libc::WEXITSTATUS(st));
    }
    if libc::WIFSIGNALED(st) {
        let signal = libc::WTERMSIG(st);
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::kill(libc::getpid(), signal);
        libc::_exit(128 + signal);
    }
    libc::_exit(127);
}

/// Limits, capabilities and Landlock on the process about to `exec`.
fn confine(plan: &ChildPlan) -> io::Result<()> {
    // SAFETY: setrlimit, prctl, syscall and close are async-signal-safe.
    unsafe {
        for (resource, limit) in RLIMITS.iter().zip(plan.rlimits) {
            if let Some(limit) = limit {
                let value = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                check(libc::setrlimit(*resource, &value))?;
            }
        }
        if plan.unshare & libc::CLONE_NEWUSER != 0 {
            // The program keeps no capability in its namespaces, even when
            // it runs as uid 0 there: an empty bounding set leaves `exec`
            // nothing to grant.
            for cap in 0..64 {
                libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
            }
        }
        if plan.ruleset_fd >= 0 {
            check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
            let r = libc::syscall(libc::SYS_landlock_restrict_self, plan.ruleset_fd, 0u32);
            if r != 0 {
                return Err(last_error());
            }
            libc::close(plan.ruleset_fd);
        }
    }
    Ok(())
}
