//! The sandbox of a CLI turn, by access level: what the CLI may write and
//! which network it may reach (pure, but for [`find_worktree`](crate::sandbox::find_worktree) and
//! [`prepare`], which look at and create directories).
//!
//! | access | writable (besides a private `TMPDIR`) | network |
//! |---|---|---|
//! | `read_only` | the CLI's state paths | [`turn_network`] |
//! | `edit` | + the work dir; in a git worktree, + its own git dir and the repository's `objects/` | [`turn_network`] |
//! | `full` | unconfined (the report says `off`) | unconfined |
//!
//! The state paths are the preset's
//! ([`CliPreset::state_paths`](crate::agent::CliPreset::state_paths)) and the
//! config's `state_dirs`, resolved against the turn's environment. Reads
//! stay open but for the credential stores under the home directory — the
//! process's and, when the turn sets another `HOME`, that one's too.

use super::CliConfig;
use crate::agent::preset::StatePath;
use crate::agent::{Access, AgentError, AgentErrorKind, Turn};
use crate::error::ErrorKind;
use crate::sandbox::{
    find_worktree, Confinement, Enforcer, NetworkPolicy, SandboxMode, SandboxPolicy, SandboxReport,
    WorktreeGit, CREDENTIAL_STORES,
};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A turn's sandbox, ready to attach to its process.
#[derive(Debug)]
pub(crate) struct TurnSandbox {
    /// `None`: unconfined (`full`, or mode `off`).
    pub confinement: Option<Arc<Confinement>>,
    /// What is enforced, for the outcome.
    pub report: SandboxReport,
}

impl TurnSandbox {
    /// Whether the kernel confines the turn's writes.
    pub fn confines_writes(&self) -> bool {
        self.report.filesystem == Enforcer::Landlock
    }
}

/// The sandbox of `turn` for the agent `config` under the turn's mode
/// (`enforce` when it sets none): its state paths created, its policy
/// prepared. Errors: `unavailable` when `enforce` cannot confine (the
/// message names what is missing and how to run anyway); `spawn` when a
/// state path cannot be created or there is no current directory.
pub(crate) fn prepare(config: &CliConfig, turn: &Turn) -> Result<TurnSandbox, AgentError> {
    let mode = turn.sandbox.unwrap_or_default();
    if turn.access == Access::Full || mode == SandboxMode::Off {
        return Ok(TurnSandbox {
            confinement: None,
            report: SandboxReport::off(),
        });
    }
    let spawn = |msg: String| AgentError::new(AgentErrorKind::Spawn, msg);
    let cwd = match &turn.workdir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()
            .map_err(|e| spawn(format!("no current directory to run the CLI in: {e}")))?,
    };
    let env = |name: &str| turn_env(config, turn, name);
    let state = state_paths(config, &env, &cwd);
    for p in &state {
        create_state_path(p).map_err(|e| {
            spawn(format!(
                "cannot create {}, which the {} agent's sandbox keeps writable as its state: {e}",
                p.path.display(),
                config.preset
            ))
        })?;
    }
    let worktree = match turn.access {
        Access::Edit => find_worktree(&cwd),
        _ => None,
    };
    let mut homes: Vec<PathBuf> = crate::sandbox::home_dir().into_iter().collect();
    if let Some(home) = env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from) {
        if !homes.contains(&home) {
            homes.push(home);
        }
    }
    let network = turn_network(config, turn);
    let Some(policy) = turn_policy(
        turn.access,
        &cwd,
        &state,
        worktree.as_ref(),
        network,
        &homes,
    ) else {
        return Ok(TurnSandbox {
            confinement: None,
            report: SandboxReport::off(),
        });
    };
    let confinement = Confinement::prepare(&policy, mode).map_err(|e| {
        let kind = match e.kind() {
            ErrorKind::Unavailable => AgentErrorKind::Unavailable,
            _ => AgentErrorKind::Spawn,
        };
        AgentError::new(
            kind,
            format!(
                "the {} agent's {} turn cannot start: {}",
                config.preset,
                turn.access,
                e.message()
            ),
        )
    })?;
    let report = confinement.report().clone();
    Ok(TurnSandbox {
        confinement: Some(Arc::new(confinement)),
        report,
    })
}

/// A variable of the turn's environment: the turn's `env`, else the
/// agent's, else the inherited one.
fn turn_env(config: &CliConfig, turn: &Turn, name: &str) -> Option<String> {
    turn.env
        .get(name)
        .or_else(|| config.env.get(name))
        .cloned()
        .or_else(|| std::env::var(name).ok())
}

/// The agent's state paths for a turn in `cwd` whose environment is `env`:
/// the preset's, then the config's `state_dirs` (`~/…` under `$HOME`; left
/// out when there is none), without repeats.
pub(crate) fn state_paths(
    config: &CliConfig,
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &Path,
) -> Vec<StatePath> {
    let mut out = config.preset.state_paths(env, cwd);
    let home = env("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .filter(|h| h.is_absolute());
    for dir in &config.state_dirs {
        let path = match dir.strip_prefix("~") {
            Ok(rest) => match &home {
                Some(h) => h.join(rest),
                None => continue,
            },
            Err(_) => cwd.join(dir),
        };
        if !out.iter().any(|p| p.path == path) {
            out.push(StatePath::dir(path));
        }
    }
    out
}

fn create_state_path(p: &StatePath) -> std::io::Result<()> {
    match p.file {
        None => std::fs::create_dir_all(&p.path),
        Some(initial) => {
            if let Some(parent) = p.path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&p.path)
            {
                Ok(mut f) => std::io::Write::write_all(&mut f, initial.as_bytes()),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
                Err(e) => Err(e),
            }
        }
    }
}

/// The network of a turn: the config's `network`, else derived — the ports
/// of the loopback URLs in the agent's and the turn's `env` values and in
/// its `args` and `extra_args` (its model server on this machine, as
/// `loopback:PORTS`), else `allow`: a cloud agent must reach its provider,
/// and the kernel filters TCP connections by port, not by host, so nothing
/// narrower than `allow` would let it through. The inherited environment
/// is not read: an unrelated loopback URL there would cut a cloud agent
/// off.
pub(crate) fn turn_network(config: &CliConfig, turn: &Turn) -> NetworkPolicy {
    if let Some(network) = &config.network {
        return network.clone();
    }
    let texts = config
        .env
        .values()
        .chain(turn.env.values())
        .chain(config.args.iter())
        .chain(config.extra_args.iter());
    let mut ports: Vec<u16> = texts.flat_map(|t| loopback_ports(t)).collect();
    ports.sort_unstable();
    ports.dedup();
    if ports.is_empty() {
        NetworkPolicy::Allow
    } else {
        NetworkPolicy::Ports(ports)
    }
}

/// The ports of the `http://` and `https://` URLs in `text` whose host is
/// a loopback address (`localhost`, `127.x.y.z`, `[::1]`), in order of
/// appearance; a URL without a port counts as its scheme's (80, 443).
pub(crate) fn loopback_ports(text: &str) -> Vec<u16> {
    let lower = text.to_ascii_lowercase();
    let mut found: Vec<(usize, u16)> = Vec::new();
    for (scheme, default) in [("http://", 80u16), ("https://", 443)] {
        let mut from = 0;
        while let Some(at) = lower[from..].find(scheme) {
            let start = from + at + scheme.len();
            from = start;
            let rest = &lower[start..];
            let end = rest
                .find(|c: char| c.is_whitespace() || "/?#\"'`,;()<>\\{}".contains(c))
                .unwrap_or(rest.len());
            let authority = &rest[..end];
            let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
            let (host, port) = match host_port.strip_prefix('[') {
                Some(v6) => match v6.split_once(']') {
                    Some((host, "")) => (host, None),
                    Some((host, after)) => match after.strip_prefix(':') {
                        Some(port) => (host, Some(port)),
                        None => continue,
                    },
                    None => continue,
                },
                None => match host_port.split_once(':') {
                    Some((host, port)) => (host, Some(port)),
                    None => (host_port, None),
                },
            };
            let loopback = host == "localhost"
                || host.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
                || host.parse::<Ipv6Addr>().is_ok_and(|ip| ip.is_loopback());
            if !loopback {
                continue;
            }
            let port = match port {
                None => default,
                Some(p) => match p.parse::<u16>() {
                    Ok(p) if p > 0 => p,
                    _ => continue,
                },
            };
            found.push((start, port));
        }
    }
    found.sort_unstable();
    found.into_iter().map(|(_, port)| port).collect()
}

/// The policy of a turn at `access` in `workdir` (`None` for `full`:
/// unconfined). Credential stores are hidden under each of `homes`.
pub(crate) fn turn_policy(
    access: Access,
    workdir: &Path,
    state: &[StatePath],
    worktree: Option<&WorktreeGit>,
    network: NetworkPolicy,
    homes: &[PathBuf],
) -> Option<SandboxPolicy> {
    if access == Access::Full {
        return None;
    }
    let mut policy = SandboxPolicy::new(homes.first().map(PathBuf::as_path)).with_network(network);
    for home in homes.iter().skip(1) {
        for store in CREDENTIAL_STORES {
            let path = home.join(store);
            if !policy.hidden.contains(&path) {
                policy.hidden.push(path);
            }
        }
    }
    policy.writable = state.iter().map(|p| p.path.clone()).collect();
    if access == Access::Edit {
        policy.writable.push(workdir.to_path_buf());
        if let Some(wt) = worktree {
            policy.writable.push(wt.git_dir.clone());
            policy.writable.push(wt.objects.clone());
        }
    }
    Some(policy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::preset::CliPreset;

    /// The state paths of `preset` with `config`'s extra dirs, for a turn whose
    /// environment is exactly `vars` (for tests of the resolution).
    fn resolved(config: &CliConfig, vars: &[(&str, &str)], cwd: &str) -> Vec<PathBuf> {
        let env = |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        };
        state_paths(config, &env, Path::new(cwd))
            .into_iter()
            .map(|p| p.path)
            .collect()
    }

    #[test]
    fn loopback_urls_give_their_ports() {
        let cases: &[(&str, &[u16])] = &[
            ("http://127.0.0.1:9000", &[9000]),
            ("http://localhost:11434/v1", &[11434]),
            ("HTTP://LOCALHOST:8080/v1", &[8080]),
            ("http://[::1]:8081/v1", &[8081]),
            ("http://127.1.2.3:7/x", &[7]),
            ("https://localhost/v1", &[443]),
            ("http://localhost", &[80]),
            ("http://user:pw@127.0.0.1:5000/", &[5000]),
            (
                "model_providers.local.base_url=http://127.0.0.1:41234/v1",
                &[41234],
            ),
            (
                r#"{"baseURL":"http://127.0.0.1:3000/v1","b":"http://localhost:3001"}"#,
                &[3000, 3001],
            ),
            ("https://api.anthropic.com", &[]),
            ("http://10.0.0.1:8080", &[]),
            ("http://localhost.evil.com:80", &[]),
            ("http://[::2]:80", &[]),
            ("http://127.0.0.1:0", &[]),
            ("http://127.0.0.1:99999", &[]),
            ("127.0.0.1:8080", &[]),
            ("", &[]),
        ];
        for (text, want) in cases {
            assert_eq!(loopback_ports(text), *want, "{text}");
        }
    }

    #[test]
    fn the_network_is_configured_or_derived() {
        let turn = Turn::new("p");
        let mut c = CliConfig::new(CliPreset::Claude);
        assert_eq!(turn_network(&c, &turn), NetworkPolicy::Allow, "cloud");
        c.env
            .insert("ANTHROPIC_BASE_URL".into(), "http://127.0.0.1:9000".into());
        c.extra_args = vec!["-c".into(), "base=http://localhost:9001/v1".into()];
        let mut t = turn.clone();
        t.env.insert("X".into(), "http://[::1]:9000".into());
        assert_eq!(turn_network(&c, &t), NetworkPolicy::Ports(vec![9000, 9001]));
        c.network = Some(NetworkPolicy::Deny);
        assert_eq!(turn_network(&c, &t), NetworkPolicy::Deny, "configured wins");
    }

    #[test]
    fn config_state_dirs_add_to_the_presets() {
        let mut c = CliConfig::new(CliPreset::Codex);
        c.state_dirs = vec!["~/.cache/plug".into(), "/abs".into(), "~/.codex".into()];
        assert_eq!(
            resolved(&c, &[("HOME", "/h")], "/w"),
            [
                PathBuf::from("/h/.codex"),
                "/h/.cache/plug".into(),
                "/abs".into()
            ]
        );
        // No HOME: `~` dirs cannot be resolved and are left out.
        let mut custom = CliConfig::new(CliPreset::Custom);
        custom.state_dirs = vec!["~/.x".into(), "/y".into()];
        assert_eq!(resolved(&custom, &[], "/w"), [PathBuf::from("/y")]);
    }

    #[test]
    fn policies_by_access() {
        let state = [StatePath::dir("/h/.codex")];
        let homes = [PathBuf::from("/real"), PathBuf::from("/h")];
        let wt = WorktreeGit {
            git_dir: "/repo/.git/worktrees/w".into(),
            objects: "/repo/.git/objects".into(),
        };
        let net = NetworkPolicy::Ports(vec![9000]);
        let ro = turn_policy(
            Access::ReadOnly,
            Path::new("/w"),
            &state,
            Some(&wt),
            net.clone(),
            &homes,
        )
        .unwrap();
        assert_eq!(ro.writable, [PathBuf::from("/h/.codex")]);
        assert_eq!(ro.network, net);
        assert!(ro.hidden.contains(&PathBuf::from("/real/.ssh")));
        assert!(ro.hidden.contains(&PathBuf::from("/h/.ssh")));
        assert!(ro.isolate_processes);
        let edit = turn_policy(
            Access::Edit,
            Path::new("/w"),
            &state,
            Some(&wt),
            net.clone(),
            &homes,
        )
        .unwrap();
        assert_eq!(
            edit.writable,
            [
                PathBuf::from("/h/.codex"),
                "/w".into(),
                "/repo/.git/worktrees/w".into(),
                "/repo/.git/objects".into()
            ]
        );
        assert!(turn_policy(Access::Full, Path::new("/w"), &state, None, net, &homes).is_none());
    }
}
