//! What the running kernel can enforce (Linux), probed once per process.
#![allow(unsafe_code)]

use std::sync::OnceLock;

/// The environment variable that makes the probe report features as
/// missing (`landlock`, `userns`, comma-separated): how tests and users
/// check what `enforce` and `auto` do on a kernel without them. It can only
/// make coderig refuse more or confine less *visibly* (every outcome's
/// report says what was not enforced), never confine less silently.
pub const PRETEND_MISSING_ENV: &str = "CODERIG_SANDBOX_PRETEND_MISSING";

/// The kernel's sandboxing features.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelSupport {
    /// The Landlock ABI version (0: no Landlock).
    pub landlock_abi: u32,
    /// Why no Landlock, when `landlock_abi` is 0.
    pub landlock_missing: Option<String>,
    /// Why no unprivileged user namespaces (and so no PID or network
    /// namespace), when they cannot be created.
    pub userns_missing: Option<String>,
}

/// The kernel's support, with [`PRETEND_MISSING_ENV`] applied.
pub fn support() -> KernelSupport {
    static REAL: OnceLock<KernelSupport> = OnceLock::new();
    let mut support = REAL.get_or_init(probe).clone();
    if let Ok(pretend) = std::env::var(PRETEND_MISSING_ENV) {
        for feature in pretend.split(',').map(str::trim) {
            match feature {
                "landlock" => {
                    support.landlock_abi = 0;
                    support.landlock_missing = Some(format!(
                        "the kernel has no Landlock ({PRETEND_MISSING_ENV} says so)"
                    ));
                }
                "userns" => {
                    support.userns_missing = Some(format!(
                        "user namespaces cannot be created ({PRETEND_MISSING_ENV} says so)"
                    ));
                }
                _ => {}
            }
        }
    }
    support
}

fn probe() -> KernelSupport {
    // SAFETY: landlock_create_ruleset with a null attribute and the VERSION
    // flag only returns the ABI number (or an error); it creates nothing.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    let (landlock_abi, landlock_missing) = if abi > 0 {
        (abi as u32, None)
    } else {
        let e = std::io::Error::last_os_error();
        let why = match e.raw_os_error() {
            Some(libc::ENOSYS) => "the kernel is older than 5.13 or built without Landlock".into(),
            Some(libc::EOPNOTSUPP) => {
                "Landlock is built in but not enabled at boot (add landlock to the lsm= kernel parameter)".into()
            }
            _ => format!("Landlock is unavailable ({e})"),
        };
        (0, Some(why))
    };
    KernelSupport {
        landlock_abi,
        landlock_missing,
        userns_missing: probe_userns().err(),
    }
}

/// Forks a child that creates the namespaces a sandbox uses and exits.
fn probe_userns() -> Result<(), String> {
    // SAFETY: the child makes only async-signal-safe calls (unshare,
    // _exit); the parent reaps it.
    let status = unsafe {
        let pid = libc::fork();
        if pid < 0 {
            return Err(format!(
                "cannot fork to probe user namespaces: {}",
                std::io::Error::last_os_error()
            ));
        }
        if pid == 0 {
            let flags = libc::CLONE_NEWUSER | libc::CLONE_NEWPID | libc::CLONE_NEWNET;
            let code = if libc::unshare(flags) == 0 {
                0
            } else {
                *libc::__errno_location()
            };
            libc::_exit(code);
        }
        let mut st = 0;
        while libc::waitpid(pid, &mut st, 0) < 0 {
            if *libc::__errno_location() != libc::EINTR {
                return Err("cannot wait for the user namespace probe".into());
            }
        }
        st
    };
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        return Ok(());
    }
    let errno = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        0
    };
    let mut why = format!(
        "user namespaces cannot be created ({})",
        std::io::Error::from_raw_os_error(errno)
    );
    let read = |p: &str| std::fs::read_to_string(p).ok().map(|s| s.trim().to_owned());
    if read("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        why.push_str(": /proc/sys/user/max_user_namespaces is 0");
    } else if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        why.push_str(": set kernel.unprivileged_userns_clone=1");
    } else if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1")
    {
        why.push_str(": AppArmor restricts them (kernel.apparmor_restrict_unprivileged_userns=1)");
    }
    Err(why)
}
