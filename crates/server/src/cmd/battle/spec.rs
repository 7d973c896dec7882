//! What `coderig battle run` checks before its rig opens: the prompt, the
//! flags turned into the battle spec's JSON (only what was given, so the
//! core's decoder gives every face the same defaults and messages), the
//! spec against the config's agents, and the rig's project roots.

use super::RunArgs;
use crate::cmd::rig::RigArgs;
use coderig::arena::{BattleSpec, BattleType};
use coderig::rig::RigConfig;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What `battle run` checked before any store is opened, and the rig it
/// opens.
pub(super) struct Prepared {
    pub(super) spec: BattleSpec,
    pub(super) config: RigConfig,
    /// The project, canonical (none for a qa battle without one).
    pub(super) project: Option<PathBuf>,
}

/// `IDENTITY:MODEL` as `{"identity", "model"}`; `flag` names the option in
/// the error.
fn agent_json(flag: &str, text: &str) -> Result<Value, coderig::Error> {
    match text.split_once(':') {
        Some((identity, model)) if !identity.trim().is_empty() && !model.trim().is_empty() => {
            Ok(json!({"identity": identity, "model": model}))
        }
        _ => Err(coderig::Error::invalid_input(format!(
            "{flag} {text:?}: expected IDENTITY:MODEL (e.g. claude:sonnet, local:qwen3-coder:30b)"
        ))
        .with_detail("path", flag.trim_start_matches('-'))),
    }
}

fn canonical(flag: &str, path: &Path) -> Result<PathBuf, coderig::Error> {
    std::fs::canonicalize(path).map_err(|e| {
        coderig::Error::invalid_input(format!("{flag} {}: {e}", path.display()))
            .with_detail("path", flag.trim_start_matches('-'))
    })
}

/// `IDENTITY:MODEL[=INSTRUCTION]` as `{"identity", "model", "instruction"?}`:
/// the instruction is everything after the first `=` (checked by the
/// core's decoder like any other face's).
fn contestant_json(text: &str) -> Result<Value, coderig::Error> {
    let (agent, instruction) = match text.split_once('=') {
        Some((agent, instruction)) => (agent, Some(instruction)),
        None => (text, None),
    };
    let mut value = agent_json("-c", agent).map_err(|_| {
        coderig::Error::invalid_input(format!(
            "-c {text:?}: expected IDENTITY:MODEL or IDENTITY:MODEL=INSTRUCTION \
             (e.g. claude:sonnet, local:qwen3-coder:30b=Write the test first.)"
        ))
        .with_detail("path", "c")
    })?;
    if let Some(instruction) = instruction {
        value["instruction"] = json!(instruction);
    }
    Ok(value)
}

/// The battle spec's JSON from the flags: only what was given, so the
/// decoder's defaults and checks are the ones every face gets.
fn spec_json(
    args: &RunArgs,
    prompt: &str,
    project: Option<&Path>,
) -> Result<Value, coderig::Error> {
    let contestants = args
        .contestants
        .iter()
        .map(|c| contestant_json(c.as_str()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut spec = json!({
        "battle_type": args.battle_type.as_str(),
        "prompt": prompt,
        "contestants": contestants,
        "judge": agent_json("--judge", &args.judge)?,
        "keep_worktrees": args.keep_worktrees,
    });
    if let Some(project) = project {
        spec["project"] = json!(project.display().to_string());
    }
    if let Some(base) = &args.base {
        spec["base"] = json!(base);
    }
    if args.repro.is_some()
        || args.suite.is_some()
        || args.oracle_timeout.is_some()
        || args.oracle_network.is_some()
    {
        let mut oracle = serde_json::Map::new();
        for (key, value) in [
            ("repro", &args.repro),
            ("suite", &args.suite),
            ("timeout", &args.oracle_timeout),
            ("network", &args.oracle_network),
        ] {
            if let Some(value) = value {
                oracle.insert(key.into(), json!(value));
            }
        }
        spec["oracle"] = Value::Object(oracle);
    }
    if let Some(timeout) = &args.timeout {
        spec["contestant_timeout"] = json!(timeout);
    }
    Ok(spec)
}

/// Every check that needs no store: the prompt, the flags, the spec (all
/// its problems at once, with their paths), the identities against the
/// config. A failure here leaves nothing behind.
pub(super) fn prepare(args: &RunArgs, rig: &RigArgs) -> Result<Prepared, coderig::Error> {
    let prompt = match (&args.prompt, &args.prompt_file) {
        (Some(prompt), _) => prompt.clone(),
        (None, Some(file)) => crate::cmd::read_text(file)?,
        // clap makes one of the two required
        (None, None) => return Err(coderig::Error::invalid_input("missing --prompt")),
    };
    let project = match (&args.project, args.battle_type) {
        (Some(project), _) => Some(canonical("--project", project)?),
        (None, BattleType::Coding) => {
            let here = std::env::current_dir().map_err(|e| {
                coderig::Error::io(format!(
                    "cannot read the current directory (the default --project): {e}"
                ))
            })?;
            Some(canonical("--project", &here)?)
        }
        (None, BattleType::Qa) => None,
    };
    let spec = BattleSpec::from_json(&spec_json(args, &prompt, project.as_deref())?)?;
    let mut config = rig.config()?;
    // Its own battle or run only: beside a server on the same store, the
    // server's work stays the server's.
    config.only_own_work = true;
    spec.validate_against(&config.agents.identities())?;
    // The project itself by default; the rig resolves them (a root that is
    // not a directory is refused there, naming it).
    config.project_roots = if args.project_roots.is_empty() {
        project.iter().cloned().collect()
    } else {
        args.project_roots.clone()
    };
    // A person watches: pick up the next step sooner than a server would.
    config.poll = Some(Duration::from_millis(200));
    Ok(Prepared {
        spec,
        config,
        project,
    })
}

/// A data directory inside the project (the default `.coderig` when run at
/// the top of the repository) would show in `git status` and be copied by
/// a `snapshot` base: it goes into `.git/info/exclude`, as `Arena/` does.
/// Best effort: a repository whose `.git` is not a directory (a linked
/// worktree, a submodule) is left alone.
pub(super) fn exclude_data_dir(project: &Path, data_dir: &Path) {
    let Ok(data_dir) = std::fs::canonicalize(data_dir) else {
        return;
    };
    let Ok(relative) = data_dir.strip_prefix(project) else {
        return;
    };
    let git_dir = project.join(".git");
    if relative.as_os_str().is_empty() || !git_dir.is_dir() {
        return;
    }
    let line = format!("/{}/", relative.display());
    let exclude = git_dir.join("info").join("exclude");
    let current = std::fs::read_to_string(&exclude).unwrap_or_default();
    if current.lines().any(|l| l.trim() == line) {
        return;
    }
    let mut text = current;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!(
        "# coderig's data directory (coderig adds this line)\n{line}\n"
    ));
    let _ = std::fs::create_dir_all(git_dir.join("info"));
    let _ = std::fs::write(&exclude, text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_are_identity_colon_model() {
        assert_eq!(
            agent_json("-c", "local:qwen3-coder:30b").unwrap(),
            json!({"identity": "local", "model": "qwen3-coder:30b"})
        );
        for bad in ["alice", "alice:", ":m", ""] {
            let e = agent_json("-c", bad).unwrap_err();
            assert_eq!(e.kind(), coderig::ErrorKind::InvalidInput, "{bad:?}");
        }
    }
}
