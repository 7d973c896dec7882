//! The CLI presets (pure): which CLIs coderig knows how to drive headless,
//! their binaries and their stream formats. The flags each preset passes
//! are built by `cli::build_command` (feature `runtime`).

use super::parse::StreamFormat;
use crate::names::named_enum;

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
