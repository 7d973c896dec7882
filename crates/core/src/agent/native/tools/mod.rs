//! The native agent's tools (feature `runtime`): what each does with a
//! call's arguments, in the workdir, and what the model is told.
//!
//! One file per room: [`paths`] (every path confined to the workdir),
//! [`read`] (`read_file`, `list_files`, `grep`), [`edit`] (`edit_file`,
//! `write_file`, `edit_lines` — coderig's edit engine and its guards),
//! [`run`] (`run`, under the sandbox). This file offers them
//! ([`ToolBox::specs`]) and dispatches a call ([`ToolBox::call`]).
//!
//! Every tool answers; none fails the turn. Bad arguments, a path outside
//! the workdir, a missing file, a refused edit: each is a [`ToolResult`]
//! with `ok: false` and a message that says what to do next.

pub mod edit;
pub mod grep;
pub mod list;
pub mod paths;
pub mod read;
pub mod run;

use super::{ToolCall, ToolSpec, ToolsMode};
use crate::agent::Access;
use crate::sandbox::SandboxMode;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// About how many characters of one tool's output the model is shown; the
/// rest is cut from the middle (head and tail kept) and kept whole in the
/// turn's artifacts.
pub const OUTPUT_CAP_CHARS: usize = 10_000;

/// What one call answered.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolResult {
    /// Whether the tool did what was asked.
    pub ok: bool,
    /// What the model is told (already capped).
    pub output: String,
    /// The whole output, when `output` is a cut of it (kept in the
    /// turn's artifacts).
    pub full: Option<String>,
    /// A stable code for a refusal (`NOT_FOUND`, `AMBIGUOUS`,
    /// `OUTSIDE_WORKDIR`, `BAD_ARGUMENTS`, `TIMEOUT`, `EXIT_1`, ...), used
    /// to notice the same error repeating.
    pub code: Option<String>,
    /// The summary, when the call was `finish`.
    pub finish: Option<String>,
}

impl ToolResult {
    /// A success telling the model `output`.
    pub fn ok(output: impl Into<String>) -> Self {
        ToolResult {
            ok: true,
            output: output.into(),
            ..Self::default()
        }
    }

    /// A refusal with `code`, telling the model `message`.
    pub fn refused(code: impl Into<String>, message: impl Into<String>) -> Self {
        ToolResult {
            ok: false,
            output: message.into(),
            code: Some(code.into()),
            ..Self::default()
        }
    }

    /// This result with its output capped to [`OUTPUT_CAP_CHARS`] (head
    /// and tail kept, the number of characters cut said in the middle);
    /// the whole output moves to `full` when cut.
    pub fn capped(mut self) -> Self {
        if let Some(cut) = cap_head_tail(&self.output, OUTPUT_CAP_CHARS) {
            self.full = Some(std::mem::replace(&mut self.output, cut));
        }
        self
    }
}

/// `text` cut to about `cap` characters, its head and tail kept and the
/// cut said in between (`[... 12345 characters cut ...]`); `None` when it
/// fits. Cuts fall on character boundaries, at line ends where one is near.
pub fn cap_head_tail(text: &str, cap: usize) -> Option<String> {
    let total = text.chars().count();
    if total <= cap {
        return None;
    }
    let head_chars = cap * 2 / 5;
    let tail_chars = cap - head_chars;
    let head_end = text
        .char_indices()
        .nth(head_chars)
        .map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(total - tail_chars)
        .map_or(text.len(), |(i, _)| i);
    // Prefer whole lines when a line end is within the last/first fifth.
    let slack = cap / 5;
    let head_end = text[..head_end]
        .rfind('\n')
        .filter(|&i| head_end - i < slack)
        .map_or(head_end, |i| i + 1);
    let tail_start = text[tail_start..]
        .find('\n')
        .filter(|&i| i < slack)
        .map_or(tail_start, |i| tail_start + i + 1);
    let cut = text[head_end..tail_start].chars().count();
    Some(format!(
        "{}\n[... {cut} characters cut; the whole output is in the turn's artifacts ...]\n{}",
        &text[..head_end],
        &text[tail_start..]
    ))
}

/// Decodes a call's arguments into `T` (flat, snake_case, unknown keys
/// refused); the error is a `BAD_ARGUMENTS` result naming the field and
/// the tool's arguments.
pub fn arguments<T: DeserializeOwned>(call: &ToolCall, spec: &ToolSpec) -> Result<T, ToolResult> {
    crate::json::decode::<T>(call.arguments.clone()).map_err(|e| {
        let props = spec.parameters["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect::<Vec<_>>().join(", "))
            .unwrap_or_default();
        let required = spec.parameters["required"]
            .as_array()
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        ToolResult::refused(
            "BAD_ARGUMENTS",
            format!(
                "{}: bad arguments: {}. It takes {{{props}}} (required: {required}). Call it again with those.",
                spec.name,
                e.message()
            ),
        )
    })
}

/// What the tools may do and where (fixed for a turn).
#[derive(Debug, Clone)]
pub struct ToolSettings {
    /// The workdir (canonicalized by [`ToolBox::new`]); every path is
    /// confined to it.
    pub workdir: PathBuf,
    /// The turn's access: `read_only` offers no tool that writes or runs.
    pub access: Access,
    /// Which tool set.
    pub mode: ToolsMode,
    /// `read_file` shows `LINE#HH|` anchors and `edit_lines` is offered.
    pub hashline: bool,
    /// The sandbox mode of `run` (`None`: enforce).
    pub sandbox: Option<SandboxMode>,
    /// The network `run` may reach (default deny).
    pub network: crate::sandbox::NetworkPolicy,
    /// Default and longest timeout of one `run`.
    pub run_timeout: Duration,
    /// Environment added to `run`'s commands.
    pub env: BTreeMap<String, String>,
}

/// The tools of one turn, with the little state they keep (failed edits
/// per file).
#[derive(Debug)]
pub struct ToolBox {
    settings: ToolSettings,
    specs: Vec<ToolSpec>,
    edit_failures: BTreeMap<PathBuf, u32>,
}

impl ToolBox {
    /// The tools for `settings`. Fails with a message when the workdir
    /// does not exist or is not a directory.
    pub fn new(mut settings: ToolSettings) -> Result<Self, String> {
        settings.workdir = std::fs::canonicalize(&settings.workdir)
            .map_err(|e| format!("workdir {}: {e}", settings.workdir.display()))?;
        if !settings.workdir.is_dir() {
            return Err(format!(
                "workdir {} is not a directory",
                settings.workdir.display()
            ));
        }
        let specs = specs_for(&settings);
        Ok(ToolBox {
            settings,
            specs,
            edit_failures: BTreeMap::new(),
        })
    }

    /// The settings (workdir canonicalized).
    pub fn settings(&self) -> &ToolSettings {
        &self.settings
    }

    /// The tools offered, in the order the model sees them.
    pub fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    /// Runs one call. Never fails: an unknown tool, bad arguments or a
    /// refusal is a result with `ok: false`. `cancel` stops a running
    /// command (its whole tree).
    pub async fn call(&mut self, call: &ToolCall, cancel: &CancellationToken) -> ToolResult {
        let Some(spec) = self.specs.iter().find(|s| s.name == call.name).cloned() else {
            let names: Vec<&str> = self.specs.iter().map(|s| s.name.as_str()).collect();
            return ToolResult::refused(
                "UNKNOWN_TOOL",
                format!(
                    "There is no tool {:?} here. The tools are: {}.",
                    call.name,
                    names.join(", ")
                ),
            );
        };
        let root = self.settings.workdir.clone();
        let result = match call.name.as_str() {
            "read_file" => read::read_file(&root, call, &spec, self.settings.hashline),
            "list_files" => list::list_files(&root, call, &spec),
            "grep" => grep::grep(&root, call, &spec),
            "edit_file" => edit::edit_file(&root, call, &spec, &mut self.edit_failures),
            "write_file" => {
                let result = edit::write_file(&root, call, &spec);
                // A whole file written is the way out of refused edits: the
                // next refusal of it counts from one again.
                if result.ok {
                    if let Some(path) = call.arguments["path"].as_str() {
                        if let Ok(p) = paths::resolve(&root, path, true) {
                            self.edit_failures.remove(&p);
                        }
                    }
                }
                result
            }
            "edit_lines" => edit::edit_lines(&root, call, &spec),
            "run" => run::run(&self.settings, call, &spec, cancel).await,
            "finish" => finish(call, &spec),
            _ => ToolResult::refused("UNKNOWN_TOOL", format!("{} is not available", call.name)),
        };
        result.capped()
    }
}

/// The arguments of `finish`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FinishArgs {
    #[serde(default)]
    summary: String,
}

fn finish(call: &ToolCall, spec: &ToolSpec) -> ToolResult {
    match arguments::<FinishArgs>(call, spec) {
        Ok(a) => ToolResult {
            finish: Some(a.summary),
            ..ToolResult::ok("Finished.")
        },
        Err(r) => r,
    }
}

/// The spec of `finish`.
pub fn finish_spec() -> ToolSpec {
    ToolSpec {
        name: "finish".into(),
        description: "End your turn when the task is done (or cannot be done): say in `summary` what you changed and how you checked it.".into(),
        parameters: json!({
            "type": "object",
            "properties": {"summary": {"type": "string", "description": "What you did and how you verified it."}},
            "required": ["summary"],
            "additionalProperties": false
        }),
    }
}

/// The tools `settings` offers: `bash` mode → `run` (not at `read_only`)
/// and `finish`; `coderig` mode → the readers, then the writers and `run`
/// unless `read_only` (`edit_lines` only with hashline), then `finish`.
pub fn specs_for(settings: &ToolSettings) -> Vec<ToolSpec> {
    let writes = settings.access != Access::ReadOnly;
    let mut specs = vec![];
    if settings.mode == ToolsMode::Coderig {
        specs.extend([
            read::read_file_spec(settings.hashline),
            list::list_files_spec(),
            grep::grep_spec(),
        ]);
        if writes {
            specs.extend([edit::edit_file_spec(), edit::write_file_spec()]);
            if settings.hashline {
                specs.push(edit::edit_lines_spec());
            }
        }
    }
    if writes {
        specs.push(run::run_spec());
    }
    specs.push(finish_spec());
    specs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_keeps_head_and_tail_and_says_the_cut() {
        assert_eq!(cap_head_tail("short", 10), None);
        let text: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        let cut = cap_head_tail(&text, 1000).unwrap();
        assert!(cut.starts_with("line 0\n"));
        assert!(cut.ends_with("line 1999\n"));
        assert!(cut.contains("characters cut"));
        assert!(cut.chars().count() < 1200, "{}", cut.len());
        // Multi-byte text is cut on character boundaries.
        let wide = "é".repeat(5000);
        assert!(cap_head_tail(&wide, 100).is_some());
    }
}
