//! The command line of a CLI turn (pure): preset, config and turn in, the
//! [`ProcessSpec`] to run out.

use crate::agent::parse::StreamFormat;
use crate::agent::process::ProcessSpec;
use crate::agent::{Access, AgentError, AgentErrorKind, Turn};
use crate::sandbox::NetworkPolicy;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use crate::agent::preset::CliPreset;

/// How to run one CLI agent. `CliConfig::new(preset)` gives the defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct CliConfig {
    /// Which CLI.
    pub preset: CliPreset,
    /// The program (`None`: the preset's binary on `PATH`; `custom` needs one).
    pub command: Option<PathBuf>,
    /// `custom` only: the whole argument list, with `{prompt}`, `{model}`
    /// and `{workdir}` replaced wherever they occur (a placeholder whose
    /// value the turn does not give is a configuration error).
    pub args: Vec<String>,
    /// Appended to the preset's own flags (provider settings, `--max-turns`,
    /// …), before the prompt for CLIs that take the prompt last.
    pub extra_args: Vec<String>,
    /// Added to the inherited environment (the turn's own `env` wins).
    pub env: BTreeMap<String, String>,
    /// `custom` only: the stdout format (`None`: `text`). A preset given a
    /// format other than its own is a configuration error.
    pub format: Option<StreamFormat>,
    /// `custom` only: the command itself keeps a `read_only` turn from
    /// writing. Without it a `custom` agent refuses `read_only` turns that
    /// the sandbox does not confine either (mode `off`, or `auto` on a
    /// kernel without Landlock), since nothing would enforce them.
    pub enforces_read_only: bool,
    /// Directories the CLI writes its own state to, kept writable in its
    /// sandbox at `read_only` and `edit`, besides the preset's own
    /// ([`CliPreset::state_paths`]; a `custom` agent has only these).
    /// Absolute, or `~/…` under the turn's `HOME`; created when missing.
    pub state_dirs: Vec<PathBuf>,
    /// What the sandbox lets the CLI reach at `read_only` and `edit`
    /// (`None`: derived from the loopback URLs in its `env` and arguments,
    /// see `cli::turn_network`).
    pub network: Option<NetworkPolicy>,
    /// Wall-clock limit of a turn that sets none (default 20 min).
    pub timeout: Duration,
    /// Idle limit of a turn that sets none (default 5 min): no stdout line
    /// for that long and the CLI is killed as hung.
    pub idle_timeout: Duration,
    /// SIGTERM to SIGKILL (default 5 s).
    pub kill_grace: Duration,
}

impl CliConfig {
    /// The defaults for `preset`.
    pub fn new(preset: CliPreset) -> Self {
        CliConfig {
            preset,
            command: None,
            args: Vec::new(),
            extra_args: Vec::new(),
            env: BTreeMap::new(),
            format: None,
            enforces_read_only: false,
            state_dirs: Vec::new(),
            network: None,
            timeout: Duration::from_secs(20 * 60),
            idle_timeout: Duration::from_secs(5 * 60),
            kill_grace: Duration::from_secs(5),
        }
    }

    /// The format its stdout is parsed with.
    pub fn stream_format(&self) -> StreamFormat {
        self.preset
            .format()
            .or(self.format)
            .unwrap_or(StreamFormat::Text)
    }
}

/// opencode's permission config (`OPENCODE_PERMISSION`) per access level.
/// It is merged over the user's config files, so a `deny` here wins.
/// `external_directory` is denied below `full` so that edits stay in the
/// work dir (older versions hang on an `ask` in `run`).
pub const OPENCODE_PERMISSIONS: [(Access, &str); 3] = [
    (
        Access::ReadOnly,
        r#"{"edit":"deny","bash":"deny","webfetch":"deny","external_directory":"deny"}"#,
    ),
    (
        Access::Edit,
        r#"{"edit":"allow","bash":"allow","webfetch":"allow","external_directory":"deny"}"#,
    ),
    (
        Access::Full,
        r#"{"edit":"allow","bash":"allow","webfetch":"allow","external_directory":"allow"}"#,
    ),
];

/// The process that runs `turn` with `config`: program, flags (headless
/// mode, stream format, model, access), environment and work dir. The
/// returned spec has no sandbox: the caller attaches it.
///
/// `confined` says whether coderig's sandbox confines the turn's writes
/// (Landlock enforced). Then codex runs without its own sandbox
/// (`--sandbox danger-full-access`): its bubblewrap cannot start inside
/// coderig's (it must write `/proc/self/uid_map`, which the kernel refuses
/// there), so every shell command would hang; coderig's sandbox confines
/// those commands instead, at least as tightly. And a `custom` agent may
/// take `read_only` turns.
///
/// Pure: no lookup on `PATH`, no file system. Errors, all before anything
/// runs: a relative work dir, bad configuration (`custom` without a
/// command, `args` or a foreign `format` on a preset, a placeholder without
/// a value) are [`AgentErrorKind::Spawn`]; a `read_only` turn for a
/// `custom` agent without `enforces_read_only`, not `confined`, is
/// [`AgentErrorKind::Unavailable`].
pub fn build_command(
    config: &CliConfig,
    turn: &Turn,
    confined: bool,
) -> Result<ProcessSpec, AgentError> {
    let bad = |msg: String| AgentError::new(AgentErrorKind::Spawn, msg);
    let preset = config.preset;
    if let Some(dir) = &turn.workdir {
        if !dir.is_absolute() {
            return Err(bad(format!(
                "the work dir {} is not absolute",
                dir.display()
            )));
        }
    }
    if preset != CliPreset::Custom {
        if !config.args.is_empty() {
            return Err(bad(format!(
                "`args` is for the custom preset; {preset} takes `extra_args`"
            )));
        }
        if let Some(f) = config.format.filter(|f| Some(*f) != preset.format()) {
            return Err(bad(format!("{preset} prints its own format, not {f}")));
        }
    }
    let program = match (&config.command, preset.binary()) {
        (Some(c), _) => c.clone(),
        (None, Some(b)) => PathBuf::from(b),
        (None, None) => return Err(bad("the custom preset needs a `command`".into())),
    };
    let workdir = turn.workdir.as_deref();
    let model = turn.model.as_deref().filter(|m| !m.is_empty());
    // The preset's env first: the config's and then the turn's win over it.
    let mut env = BTreeMap::new();
    if let Some(dir) = workdir {
        // An inherited PWD names the parent's dir, and opencode takes its
        // project dir from PWD rather than from its cwd.
        env.insert("PWD".to_string(), dir.display().to_string());
    }
    let mut args: Vec<String> = Vec::new();
    let s = |x: &str| x.to_string();
    match preset {
        CliPreset::Claude => {
            args.extend([s("-p"), flag_safe(&turn.prompt)]);
            args.extend([s("--output-format"), s("stream-json"), s("--verbose")]);
            if let Some(m) = model {
                args.extend([s("--model"), s(m)]);
            }
            if let Some(sys) = &turn.system {
                args.extend([s("--append-system-prompt"), s(sys)]);
            }
            match turn.access {
                // Only read-only tools exist for the model: nothing to ask
                // for, nothing a settings file could allow.
                Access::ReadOnly => {
                    args.extend([s("--permission-mode"), s("plan")]);
                    args.extend([s("--disallowedTools"), s(CLAUDE_WRITE_TOOLS)]);
                }
                // acceptEdits allows file edits inside the work dir;
                // Bash is allowed on top (Edit includes shell commands).
                Access::Edit => {
                    args.extend([s("--permission-mode"), s("acceptEdits")]);
                    args.extend([s("--allowedTools"), s("Bash")]);
                }
                // Claude refuses to bypass permissions as root unless told
                // it is sandboxed; `full` means the caller accepts that.
                Access::Full => {
                    args.push(s("--dangerously-skip-permissions"));
                    env.insert(s("IS_SANDBOX"), s("1"));
                }
            }
            args.extend(config.extra_args.iter().cloned());
        }
        CliPreset::Qwen => {
            if turn.access == Access::Edit {
                // auto-edit approves file edits only; Edit includes the
                // shell. The flag takes an array, which would swallow a
                // positional prompt after it, so it comes first.
                args.extend([s("--allowed-tools"), s("run_shell_command")]);
            }
            args.extend([s("--output-format"), s("stream-json")]);
            if let Some(m) = model {
                args.extend([s("-m"), s(m)]);
            }
            // Non-interactive qwen leaves the tools that need approval out
            // of the model's tool list, so `plan` offers no write or shell
            // tool at all.
            let mode = match turn.access {
                Access::ReadOnly => "plan",
                Access::Edit => "auto-edit",
                Access::Full => "yolo",
            };
            args.extend([s("--approval-mode"), s(mode)]);
            if turn.access == Access::Full {
                env.insert(s("QWEN_CODE_SUPPRESS_YOLO_WARNING"), s("1"));
            }
            args.extend(config.extra_args.iter().cloned());
            args.push(flag_safe(&with_system(turn)));
        }
        CliPreset::Codex => {
            args.extend([s("exec"), s("--json"), s("--skip-git-repo-check")]);
            if let Some(dir) = workdir {
                args.extend([s("-C"), dir.display().to_string()]);
            }
            if let Some(m) = model {
                args.extend([s("-m"), s(m)]);
            }
            match turn.access {
                Access::ReadOnly | Access::Edit if confined => {
                    args.extend([s("--sandbox"), s("danger-full-access")]);
                    args.extend([s("-c"), s("approval_policy=never")]);
                }
                Access::ReadOnly | Access::Edit => {
                    let sandbox = if turn.access == Access::Edit {
                        "workspace-write"
                    } else {
                        "read-only"
                    };
                    args.extend([s("--sandbox"), s(sandbox)]);
                    args.extend([s("-c"), s("approval_policy=never")]);
                }
                Access::Full => args.push(s("--dangerously-bypass-approvals-and-sandbox")),
            }
            args.extend(config.extra_args.iter().cloned());
            args.push(flag_safe(&with_system(turn)));
        }
        CliPreset::Opencode => {
            args.extend([s("run"), s("--format"), s("json")]);
            if let Some(dir) = workdir {
                args.extend([s("--dir"), dir.display().to_string()]);
            }
            if let Some(m) = model {
                args.extend([s("-m"), s(m)]);
            }
            let permission = OPENCODE_PERMISSIONS
                .iter()
                .find(|(a, _)| *a == turn.access)
                .map_or("", |(_, p)| *p);
            env.insert(s("OPENCODE_PERMISSION"), s(permission));
            args.extend(config.extra_args.iter().cloned());
            args.push(flag_safe(&with_system(turn)));
        }
        CliPreset::Custom => {
            if turn.access == Access::ReadOnly && !config.enforces_read_only && !confined {
                return Err(AgentError::new(
                    AgentErrorKind::Unavailable,
                    "this custom agent cannot enforce read_only: the sandbox does not confine \
                     its writes (sandbox mode off, or a kernel without Landlock); set \
                     enforces_read_only when its command keeps a turn from writing",
                ));
            }
            let prompt = with_system(turn);
            for arg in &config.args {
                args.push(substitute(arg, &prompt, model, workdir).map_err(bad)?);
            }
            args.extend(config.extra_args.iter().cloned());
        }
    }
    env.extend(config.env.clone());
    env.extend(turn.env.clone());
    Ok(ProcessSpec {
        program,
        args,
        cwd: workdir.map(Path::to_path_buf),
        env,
        env_remove: Vec::new(),
        sandbox: None,
    })
}

/// Claude's tools that write or run something, denied in `read_only`.
const CLAUDE_WRITE_TOOLS: &str = "Bash,Edit,Write,MultiEdit,NotebookEdit";

/// The prompt with the system prompt before it, for CLIs without a flag
/// for one.
fn with_system(turn: &Turn) -> String {
    match turn.system.as_deref().filter(|s| !s.is_empty()) {
        Some(sys) => format!("{sys}\n\n{}", turn.prompt),
        None => turn.prompt.clone(),
    }
}

/// A prompt starting with `-` would be read as a flag by every one of
/// these argument parsers; a leading space keeps it a positional value and
/// means nothing to a model.
fn flag_safe(prompt: &str) -> String {
    if prompt.starts_with('-') {
        format!(" {prompt}")
    } else {
        prompt.to_string()
    }
}

/// `arg` with each placeholder replaced, in one left-to-right pass (so a
/// prompt that itself contains `{model}` stays as written).
fn substitute(
    arg: &str,
    prompt: &str,
    model: Option<&str>,
    workdir: Option<&Path>,
) -> Result<String, String> {
    let workdir = workdir.map(|d| d.display().to_string());
    let mut out = String::with_capacity(arg.len());
    let mut rest = arg;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let (name, value) = if tail.starts_with("{prompt}") {
            ("{prompt}", Some(prompt))
        } else if tail.starts_with("{model}") {
            ("{model}", model)
        } else if tail.starts_with("{workdir}") {
            ("{workdir}", workdir.as_deref())
        } else {
            out.push('{');
            rest = &tail[1..];
            continue;
        };
        let value = value.ok_or_else(|| {
            format!("the custom args use {name} but the turn gives no value for it")
        })?;
        out.push_str(value);
        rest = &tail[name.len()..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(access: Access) -> Turn {
        Turn::new("fix it").model("m1").workdir("/w").access(access)
    }

    fn argv(preset: CliPreset, turn: &Turn) -> Vec<String> {
        let spec = build_command(&CliConfig::new(preset), turn, false).unwrap();
        let mut v = vec![spec.program.display().to_string()];
        v.extend(spec.args);
        v
    }

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn presets_build_their_headless_command_by_table() {
        use Access::*;
        use CliPreset::*;
        let rows: &[(CliPreset, Access, &str)] = &[
            (Claude, ReadOnly, "claude -p fix-it --output-format stream-json --verbose --model m1 --permission-mode plan --disallowedTools Bash,Edit,Write,MultiEdit,NotebookEdit"),
            (Claude, Edit, "claude -p fix-it --output-format stream-json --verbose --model m1 --permission-mode acceptEdits --allowedTools Bash"),
            (Claude, Full, "claude -p fix-it --output-format stream-json --verbose --model m1 --dangerously-skip-permissions"),
            (Qwen, ReadOnly, "qwen --output-format stream-json -m m1 --approval-mode plan fix-it"),
            (Qwen, Edit, "qwen --allowed-tools run_shell_command --output-format stream-json -m m1 --approval-mode auto-edit fix-it"),
            (Qwen, Full, "qwen --output-format stream-json -m m1 --approval-mode yolo fix-it"),
            (Codex, ReadOnly, "codex exec --json --skip-git-repo-check -C /w -m m1 --sandbox read-only -c approval_policy=never fix-it"),
            (Codex, Edit, "codex exec --json --skip-git-repo-check -C /w -m m1 --sandbox workspace-write -c approval_policy=never fix-it"),
            (Codex, Full, "codex exec --json --skip-git-repo-check -C /w -m m1 --dangerously-bypass-approvals-and-sandbox fix-it"),
            (Opencode, ReadOnly, "opencode run --format json --dir /w -m m1 fix-it"),
            (Opencode, Edit, "opencode run --format json --dir /w -m m1 fix-it"),
            (Opencode, Full, "opencode run --format json --dir /w -m m1 fix-it"),
        ];
        for (preset, access, want) in rows {
            let got = argv(*preset, &turn(*access));
            let want: Vec<String> = words(want)
                .into_iter()
                .map(|w| if w == "fix-it" { "fix it".into() } else { w })
                .collect();
            assert_eq!(got, want, "{preset} {access}");
        }
    }

    #[test]
    fn a_confined_codex_leaves_the_sandbox_to_coderig() {
        // Codex's bubblewrap cannot start inside coderig's sandbox; the
        // other presets' flags do not depend on it.
        for access in [Access::ReadOnly, Access::Edit] {
            let spec =
                build_command(&CliConfig::new(CliPreset::Codex), &turn(access), true).unwrap();
            assert_eq!(
                spec.args,
                words("exec --json --skip-git-repo-check -C /w -m m1 --sandbox danger-full-access -c approval_policy=never")
                    .into_iter()
                    .chain(["fix it".to_string()])
                    .collect::<Vec<_>>(),
                "{access}"
            );
        }
        for preset in [CliPreset::Claude, CliPreset::Qwen, CliPreset::Opencode] {
            for &access in Access::ALL {
                let config = CliConfig::new(preset);
                assert_eq!(
                    build_command(&config, &turn(access), true).unwrap(),
                    build_command(&config, &turn(access), false).unwrap(),
                    "{preset} {access}"
                );
            }
        }
        let full =
            build_command(&CliConfig::new(CliPreset::Codex), &turn(Access::Full), true).unwrap();
        assert!(full
            .args
            .contains(&"--dangerously-bypass-approvals-and-sandbox".to_string()));
    }

    #[test]
    fn env_per_preset_and_access() {
        use Access::*;
        use CliPreset::*;
        // (preset, access, variable, value or None for absent)
        let rows: &[(CliPreset, Access, &str, Option<&str>)] = &[
            (Claude, Full, "IS_SANDBOX", Some("1")),
            (Claude, Edit, "IS_SANDBOX", None),
            (Qwen, Full, "QWEN_CODE_SUPPRESS_YOLO_WARNING", Some("1")),
            (
                Opencode,
                ReadOnly,
                "OPENCODE_PERMISSION",
                Some(OPENCODE_PERMISSIONS[0].1),
            ),
            (
                Opencode,
                Edit,
                "OPENCODE_PERMISSION",
                Some(OPENCODE_PERMISSIONS[1].1),
            ),
            (
                Opencode,
                Full,
                "OPENCODE_PERMISSION",
                Some(OPENCODE_PERMISSIONS[2].1),
            ),
            (Codex, Edit, "PWD", Some("/w")),
            (Opencode, Edit, "PWD", Some("/w")),
        ];
        for (preset, access, name, want) in rows {
            let spec = build_command(&CliConfig::new(*preset), &turn(*access), false).unwrap();
            assert_eq!(
                spec.env.get(*name).map(String::as_str),
                *want,
                "{preset} {access} {name}"
            );
            assert_eq!(spec.cwd.as_deref(), Some(Path::new("/w")));
        }
        for (access, json) in OPENCODE_PERMISSIONS {
            let v: serde_json::Value = serde_json::from_str(json).unwrap();
            let write = if access == ReadOnly { "deny" } else { "allow" };
            assert_eq!(v["edit"], write);
            assert_eq!(v["bash"], write);
        }
    }

    #[test]
    fn optional_parts_system_prompts_extra_args_and_env_precedence() {
        let mut config = CliConfig::new(CliPreset::Codex);
        config.command = Some("/opt/codex".into());
        config.extra_args = vec!["-c".into(), "x=1".into()];
        config.env.insert("A".into(), "config".into());
        config.env.insert("PWD".into(), "/config".into());
        let mut t = Turn::new("-do it").access(Access::Full);
        t.system = Some("be brief".into());
        t.env.insert("A".into(), "turn".into());
        let spec = build_command(&config, &t, false).unwrap();
        assert_eq!(spec.program, PathBuf::from("/opt/codex"));
        assert_eq!(
            spec.args,
            words("exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox -c x=1")
                .into_iter()
                // The system prompt comes first, so the prompt's `-` is not first.
                .chain(["be brief\n\n-do it".to_string()])
                .collect::<Vec<_>>()
        );
        assert_eq!(spec.env["A"], "turn");
        assert_eq!(
            spec.env["PWD"], "/config",
            "no work dir: the config's PWD stands"
        );
        assert_eq!(spec.cwd, None);

        // Claude takes the system prompt as a flag and keeps extra args last;
        // a prompt that looks like a flag gets a leading space.
        let mut config = CliConfig::new(CliPreset::Claude);
        config.extra_args = vec!["--max-turns".into(), "3".into()];
        let mut t = Turn::new("--help").access(Access::Edit);
        t.system = Some("be brief".into());
        let args = build_command(&config, &t, false).unwrap().args;
        assert_eq!(
            args,
            [
                "-p",
                " --help",
                "--output-format",
                "stream-json",
                "--verbose",
                "--append-system-prompt",
                "be brief",
                "--permission-mode",
                "acceptEdits",
                "--allowedTools",
                "Bash",
                "--max-turns",
                "3",
            ]
        );
    }

    #[test]
    fn custom_substitutes_placeholders_and_guards_read_only() {
        let mut config = CliConfig::new(CliPreset::Custom);
        config.command = Some("my-agent".into());
        config.args = [
            "--json",
            "--model={model}",
            "-C",
            "{workdir}",
            "{prompt}",
            "{other}",
        ]
        .map(String::from)
        .to_vec();
        config.format = Some(StreamFormat::CodexJson);
        let t = Turn::new("use {model} literally")
            .model("m")
            .workdir("/w")
            .access(Access::Edit);
        let spec = build_command(&config, &t, false).unwrap();
        assert_eq!(
            spec.args,
            [
                "--json",
                "--model=m",
                "-C",
                "/w",
                "use {model} literally",
                "{other}"
            ]
        );
        assert_eq!(config.stream_format(), StreamFormat::CodexJson);

        let e = build_command(&config, &t.clone().access(Access::ReadOnly), false).unwrap_err();
        assert_eq!(e.kind, AgentErrorKind::Unavailable);
        assert!(e.message.contains("sandbox"), "{e:?}");
        // Confined by the sandbox, a custom agent takes read_only turns.
        assert!(build_command(&config, &t.clone().access(Access::ReadOnly), true).is_ok());
        config.enforces_read_only = true;
        assert!(build_command(&config, &t.clone().access(Access::ReadOnly), false).is_ok());

        let mut no_model = t.clone();
        no_model.model = None;
        let e = build_command(&config, &no_model, false).unwrap_err();
        assert_eq!(e.kind, AgentErrorKind::Spawn);
        assert!(e.message.contains("{model}"), "{e:?}");
        assert_eq!(
            CliConfig::new(CliPreset::Custom).stream_format(),
            StreamFormat::Text
        );
    }

    #[test]
    fn bad_configurations_are_spawn_errors() {
        let t = Turn::new("p").access(Access::Edit);
        let mut custom = CliConfig::new(CliPreset::Custom);
        let mut with_args = CliConfig::new(CliPreset::Qwen);
        with_args.args = vec!["x".into()];
        let mut wrong_format = CliConfig::new(CliPreset::Claude);
        wrong_format.format = Some(StreamFormat::Text);
        let mut own_format = CliConfig::new(CliPreset::Claude);
        own_format.format = Some(StreamFormat::ClaudeStreamJson);
        for (config, turn, part) in [
            (&custom, &t, "needs a `command`"),
            (&with_args, &t, "extra_args"),
            (&wrong_format, &t, "own format"),
            (&own_format, &t.clone().workdir("rel"), "not absolute"),
        ] {
            let e = build_command(config, turn, false).unwrap_err();
            assert_eq!(e.kind, AgentErrorKind::Spawn);
            assert!(e.message.contains(part), "{part}: {e:?}");
        }
        custom.command = Some("x".into());
        assert!(build_command(&custom, &t, false).is_ok());
        assert!(build_command(&own_format, &t, false).is_ok());
    }
}
