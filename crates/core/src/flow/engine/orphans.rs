//! Processes of an attempt whose driver died.
//!
//! Every process an agent or command step starts carries
//! `CODERIG_ATTEMPT=<run>/<step>/<iteration>/<attempt>` in its
//! environment, and so does everything it starts in turn (a tool's shell,
//! a test runner's workers), whatever process group or session it moves
//! to. A group leader dies with its driver (`PR_SET_PDEATHSIG`), but its
//! children do not; the next driver on the same host finds them by that
//! variable and kills them before it starts the attempt again, so an
//! interrupted attempt never runs beside its successor.

/// The environment variable that tags an attempt's processes.
pub(crate) const ATTEMPT_VAR: &str = "CODERIG_ATTEMPT";

/// The tag of one attempt.
pub(crate) fn attempt_tag(run_id: &str, step_id: &str, iteration: u32, attempt: u32) -> String {
    format!("{run_id}/{step_id}/{iteration}/{attempt}")
}

/// Sends SIGKILL to every process of this host whose environment holds
/// `CODERIG_ATTEMPT=<tag>` and that this user may signal; returns how many
/// it signalled. Processes whose environment cannot be read (another
/// user's) are left alone.
#[cfg(target_os = "linux")]
pub(crate) fn kill_tagged(tag: &str) -> usize {
    let needle = format!("{ATTEMPT_VAR}={tag}");
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut killed = 0;
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        if pid as u32 == me {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ
            .split(|&b| b == 0)
            .any(|var| var == needle.as_bytes())
            && nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            )
            .is_ok()
        {
            killed += 1;
        }
    }
    killed
}

/// Elsewhere there is no `/proc` to search: nothing is killed.
#[cfg(not(target_os = "linux"))]
pub(crate) fn kill_tagged(_tag: &str) -> usize {
    0
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn the_tagged_processes_and_only_they_are_killed() {
        let tag = attempt_tag("r0", "step-a", 0, 1);
        let mut tagged = std::process::Command::new("sleep")
            .arg("30")
            .env(ATTEMPT_VAR, &tag)
            .spawn()
            .expect("sleep starts");
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .env(ATTEMPT_VAR, attempt_tag("r0", "step-a", 0, 2))
            .spawn()
            .expect("sleep starts");
        // Until both have exec'd: before its execve a forked child still
        // has this process's environment, without the tag.
        for child in [&tagged, &other] {
            let environ = format!("/proc/{}/environ", child.id());
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while !std::fs::read(&environ).is_ok_and(|env| {
                env.split(|&b| b == 0)
                    .any(|v| v.starts_with(b"CODERIG_ATTEMPT="))
            }) && std::time::Instant::now() < deadline
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
        assert_eq!(kill_tagged(&tag), 1);
        let status = tagged.wait().expect("the tagged sleep is reaped");
        assert!(!status.success(), "killed, not finished: {status:?}");
        assert!(
            other.try_wait().expect("polls").is_none(),
            "the other attempt's process lives"
        );
        other.kill().expect("cleanup");
        let _ = other.wait();
    }
}
