//! coderig's system prompt (pure): short, names the tools' refusal codes
//! and what to do about each. A `system_prompt` in the config (or in a
//! model's override) replaces it; a turn's own `system` is appended.

use super::ToolsMode;

const CODERIG: &str = "\
You are coderig's coding agent. You work in one repository, the workdir; every path is relative to it.
Work in small steps: look (list_files, grep, read_file), change (edit_file, write_file), check (run the tests), then call finish with a summary.
edit_file replaces `old` with `new`: copy `old` from read_file output WITHOUT the `N|` line prefixes, a few complete lines, enough to match once.
Refusals tell you what to do: NOT_FOUND (old is not in the file: read it again and copy exactly), AMBIGUOUS (old matches several places: add surrounding lines), GUARD (your change would truncate the file, drop imports or leave placeholders: send the real code), NO_OP (nothing would change), OUTSIDE_WORKDIR (use a path inside the workdir), BAD_ARGUMENTS (fix the arguments as the message says).
Tool outputs are cut when long; older ones are removed from the conversation: call a tool again when you need it.
Never ask the user anything: decide, act, verify. When the task is done, or cannot be done, call finish.";

const COMPACT: &str = "\
You are a coding agent in a repository (paths relative to it). Look (list_files, grep, read_file), change (edit_file: copy `old` exactly without the `N|` prefixes), check (run), then call finish.
Refusals say what to do: NOT_FOUND re-read and copy exactly; AMBIGUOUS add surrounding lines; GUARD send real code.";

const BASH: &str = "\
You are a coding agent working in one repository, the workdir. Your only tools are `run` (a shell command in the workdir) and `finish`.
Inspect with ls, cat, grep; edit with sed, python or a here-document; run the tests; then call finish with a summary.
Outputs are cut when long. Never ask the user anything.";

/// The system prompt of a turn: the configured one, else coderig's for
/// `mode` (its compact form when the context window is under 8,192
/// tokens); the turn's own `system` appended after a blank line.
pub fn system_prompt(
    configured: Option<&str>,
    mode: ToolsMode,
    window: u32,
    turn_system: Option<&str>,
) -> String {
    let base = match (configured, mode) {
        (Some(c), _) => c,
        (None, ToolsMode::Bash) => BASH,
        (None, ToolsMode::Coderig) if window < COMPACT_UNDER => COMPACT,
        (None, ToolsMode::Coderig) => CODERIG,
    };
    match turn_system.map(str::trim).filter(|s| !s.is_empty()) {
        Some(extra) => format!("{base}\n\n{extra}"),
        None => base.to_string(),
    }
}

/// `spec` shortened for a small context window: the description cut to
/// its first sentence, the arguments' own descriptions dropped (their
/// names and types stay). Every byte of the tools is sent with every
/// request, and at 2–8k tokens they would crowd out the task.
pub fn compact(spec: &super::ToolSpec) -> super::ToolSpec {
    let first = spec
        .description
        .split_inclusive(". ")
        .next()
        .unwrap_or(&spec.description)
        .trim()
        .to_string();
    let mut parameters = spec.parameters.clone();
    if let Some(props) = parameters
        .get_mut("properties")
        .and_then(|p| p.as_object_mut())
    {
        for p in props.values_mut() {
            if let Some(o) = p.as_object_mut() {
                o.remove("description");
            }
        }
    }
    super::ToolSpec {
        name: spec.name.clone(),
        description: first,
        parameters,
    }
}

/// The context window under which the compact prompt and tools are used.
pub const COMPACT_UNDER: u32 = 8192;

/// What the model is told when it answered without a call although its
/// reply was cut by the output limit.
pub const CUT_REPLY: &str = "Your reply was cut by the output-token limit. Send shorter replies: one tool call at a time, and edit_file with small `old`/`new` rather than whole files.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_by_mode_window_and_config() {
        let p = system_prompt(None, ToolsMode::Coderig, 32768, None);
        for code in [
            "NOT_FOUND",
            "AMBIGUOUS",
            "GUARD",
            "NO_OP",
            "OUTSIDE_WORKDIR",
            "BAD_ARGUMENTS",
        ] {
            assert!(p.contains(code), "{code}");
        }
        assert!(system_prompt(None, ToolsMode::Coderig, 4096, None).len() < p.len() / 2);
        assert!(system_prompt(None, ToolsMode::Bash, 32768, None).contains("`run`"));
        assert_eq!(
            system_prompt(Some("X"), ToolsMode::Coderig, 32768, Some(" Y ")),
            "X\n\nY"
        );
    }
}
