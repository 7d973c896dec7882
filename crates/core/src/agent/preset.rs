//! The CLI presets (pure): which CLIs coderig knows how to drive headless,
//! their binaries, their stream formats and where they keep their own
//! state. The flags each preset passes are built by `cli::build_command`
//! (feature `runtime`).

use super::parse::StreamFormat;
use crate::names::macros::named_enum;
use std::path::{Path, PathBuf};

/// Which CLI a CLI agent drives: the preset knows its headless flags, its
/// stream format and how to map an access level to its permission flags
/// (`CliConfig`, feature `runtime`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CliPreset {
    /// Claude Code (`claude -p … --output-format stream-json --verbose`).
    Claude,
    /// Qwen Code (`qwen --output-format stream-json … PROMPT`).
    Qwen,
    /// OpenAI Codex (`codex exec --json … PROMPT`).
    Codex,
    /// opencode (`opencode run --format json … PROMPT`).
    Opencode,
    /// Any CLI: a command, `args` with `{prompt}`, `{model}` and
    /// `{workdir}`, and the `format` of its stdout.
    Custom,
}
named_enum!(CliPreset, "cli preset", {
    Claude => "claude",
    Qwen => "qwen",
    Codex => "codex",
    Opencode => "opencode",
    Custom => "custom",
});

impl CliPreset {
    /// The binary looked up on `PATH` when the config names no command
    /// (`None` for `custom`, which must name one).
    pub fn binary(self) -> Option<&'static str> {
        match self {
            CliPreset::Claude => Some("claude"),
            CliPreset::Qwen => Some("qwen"),
            CliPreset::Codex => Some("codex"),
            CliPreset::Opencode => Some("opencode"),
            CliPreset::Custom => None,
        }
    }

    /// The stdout format of the preset's CLI (`None` for `custom`: its
    /// config says).
    pub fn format(self) -> Option<StreamFormat> {
        match self {
            CliPreset::Claude | CliPreset::Qwen => Some(StreamFormat::ClaudeStreamJson),
            CliPreset::Codex => Some(StreamFormat::CodexJson),
            CliPreset::Opencode => Some(StreamFormat::OpencodeJson),
            CliPreset::Custom => None,
        }
    }
}

/// One place a CLI writes its own state to (sessions, logs, settings,
/// caches): what a sandboxed turn keeps writable besides its temp dir (and
/// its work dir at `edit`). Missing ones are created before the turn, so
/// that the kernel rule has something to attach to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatePath {
    /// Absolute.
    pub path: PathBuf,
    /// `None`: a directory, created (with its parents) when missing.
    /// `Some(text)`: one file, created with `text` when missing — for a CLI
    /// that keeps a file next to its directory (claude's `~/.claude.json`),
    /// where making the directory around it writable would open the whole
    /// home directory.
    pub file: Option<&'static str>,
}

impl StatePath {
    /// A state directory.
    pub fn dir(path: impl Into<PathBuf>) -> Self {
        StatePath {
            path: path.into(),
            file: None,
        }
    }
}

impl CliPreset {
    /// Where the preset's CLI writes its own state, resolved against the
    /// turn's environment `env` (the inherited one under the agent's and
    /// the turn's own `env`; an empty value counts as unset) and `cwd` (for
    /// relative values, as the CLIs read them). Found by running each real
    /// CLI in a fresh home and listing what it wrote:
    ///
    /// | preset | state |
    /// |---|---|
    /// | claude | `$CLAUDE_CONFIG_DIR` (which then holds its `.claude.json`), else `~/.claude` and the file `~/.claude.json` |
    /// | codex | `$CODEX_HOME`, else `~/.codex` |
    /// | qwen | `$QWEN_HOME`, else `~/.qwen`; and `$QWEN_RUNTIME_DIR` when set |
    /// | opencode | `opencode` under each of `$XDG_DATA_HOME` (`~/.local/share`), `$XDG_CONFIG_HOME` (`~/.config`), `$XDG_CACHE_HOME` (`~/.cache`), `$XDG_STATE_HOME` (`~/.local/state`) |
    /// | custom | none of its own: its config's `state_dirs` |
    ///
    /// A path that needs `$HOME` is left out when there is no `HOME`.
    pub fn state_paths(self, env: &dyn Fn(&str) -> Option<String>, cwd: &Path) -> Vec<StatePath> {
        let var = |name: &str| env(name).filter(|v| !v.is_empty());
        let home = var("HOME").map(PathBuf::from).filter(|h| h.is_absolute());
        let in_home = |rel: &str| home.as_ref().map(|h| h.join(rel));
        // A directory variable as these CLIs read it: `~` is the home
        // directory, a relative path is relative to the cwd.
        let dir_var = |name: &str| -> Option<PathBuf> {
            let value = var(name)?;
            match value.strip_prefix('~') {
                Some(rest) if rest.is_empty() || rest.starts_with('/') => {
                    in_home(rest.trim_start_matches('/'))
                }
                _ => Some(cwd.join(value)),
            }
        };
        let mut out = Vec::new();
        match self {
            CliPreset::Claude => match dir_var("CLAUDE_CONFIG_DIR") {
                Some(dir) => out.push(StatePath::dir(dir)),
                None => {
                    if let (Some(dir), Some(file)) = (in_home(".claude"), in_home(".claude.json")) {
                        out.push(StatePath::dir(dir));
                        out.push(StatePath {
                            path: file,
                            file: Some("{}"),
                        });
                    }
                }
            },
            CliPreset::Codex => {
                out.extend(
                    dir_var("CODEX_HOME")
                        .or_else(|| in_home(".codex"))
                        .map(StatePath::dir),
                );
            }
            CliPreset::Qwen => {
                out.extend(
                    dir_var("QWEN_HOME")
                        .or_else(|| in_home(".qwen"))
                        .map(StatePath::dir),
                );
                out.extend(dir_var("QWEN_RUNTIME_DIR").map(StatePath::dir));
            }
            CliPreset::Opencode => {
                for (name, default) in [
                    ("XDG_DATA_HOME", ".local/share"),
                    ("XDG_CONFIG_HOME", ".config"),
                    ("XDG_CACHE_HOME", ".cache"),
                    ("XDG_STATE_HOME", ".local/state"),
                ] {
                    // The XDG spec ignores a relative value.
                    let base = var(name)
                        .map(PathBuf::from)
                        .filter(|p| p.is_absolute())
                        .or_else(|| in_home(default));
                    out.extend(base.map(|b| StatePath::dir(b.join("opencode"))));
                }
            }
            CliPreset::Custom => {}
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn paths(preset: CliPreset, vars: &[(&str, &str)]) -> Vec<(String, Option<&'static str>)> {
        let vars: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        preset
            .state_paths(&|k| vars.get(k).cloned(), Path::new("/w"))
            .into_iter()
            .map(|p| (p.path.display().to_string(), p.file))
            .collect()
    }

    fn dirs(list: &[&str]) -> Vec<(String, Option<&'static str>)> {
        list.iter().map(|d| (d.to_string(), None)).collect()
    }

    #[test]
    fn state_paths_per_preset_follow_the_environment() {
        use CliPreset::*;
        let home = [("HOME", "/h")];
        assert_eq!(
            paths(Claude, &home),
            [
                ("/h/.claude".into(), None),
                ("/h/.claude.json".into(), Some("{}"))
            ]
        );
        assert_eq!(
            paths(Claude, &[("HOME", "/h"), ("CLAUDE_CONFIG_DIR", "/c")]),
            dirs(&["/c"])
        );
        assert_eq!(paths(Codex, &home), dirs(&["/h/.codex"]));
        assert_eq!(
            paths(Codex, &[("HOME", "/h"), ("CODEX_HOME", "~/cx")]),
            dirs(&["/h/cx"])
        );
        assert_eq!(
            paths(Codex, &[("HOME", "/h"), ("CODEX_HOME", "rel")]),
            dirs(&["/w/rel"]),
            "a relative value is read from the cwd"
        );
        assert_eq!(paths(Qwen, &home), dirs(&["/h/.qwen"]));
        assert_eq!(
            paths(
                Qwen,
                &[
                    ("HOME", "/h"),
                    ("QWEN_HOME", "/q"),
                    ("QWEN_RUNTIME_DIR", "/r")
                ]
            ),
            dirs(&["/q", "/r"])
        );
        assert_eq!(
            paths(Opencode, &home),
            dirs(&[
                "/h/.local/share/opencode",
                "/h/.config/opencode",
                "/h/.cache/opencode",
                "/h/.local/state/opencode"
            ])
        );
        assert_eq!(
            paths(
                Opencode,
                &[
                    ("HOME", "/h"),
                    ("XDG_DATA_HOME", "/d"),
                    ("XDG_CONFIG_HOME", "relative"),
                    ("XDG_CACHE_HOME", ""),
                    ("XDG_STATE_HOME", "/s")
                ]
            ),
            dirs(&[
                "/d/opencode",
                "/h/.config/opencode",
                "/h/.cache/opencode",
                "/s/opencode"
            ]),
            "relative and empty XDG values fall back to the defaults"
        );
        assert_eq!(paths(Custom, &home), dirs(&[]));
        // No HOME: what needs it is left out, explicit dirs stay.
        assert_eq!(paths(Claude, &[]), dirs(&[]));
        assert_eq!(paths(Codex, &[("CODEX_HOME", "/cx")]), dirs(&["/cx"]));
    }
}
