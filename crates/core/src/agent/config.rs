//! `coderig.toml` (pure decoding): the agents a rig knows and the lanes'
//! capacities.
//!
//! ```toml
//! [agents.claude]                  # a CLI preset
//! kind = "cli"
//! preset = "claude"                # claude | qwen | codex | opencode | custom
//! command = "/opt/agents/bin/claude"
//! extra_args = ["--max-turns", "30"]
//! env = { ANTHROPIC_BASE_URL = "http://127.0.0.1:9000" }
//! timeout = "20m"
//! idle_timeout = "5m"
//! network = "loopback:9000"        # allow | deny | loopback:PORT[,PORT]; default: derived
//! state_dirs = ["~/.cache/my-plugin"]  # writable besides the preset's own (custom: its only ones)
//! [agents.local]
//! kind = "openai"
//! base_url = "http://127.0.0.1:8080/v1"
//! lane = "local"
//! [agents.alice]
//! kind = "scripted"
//! script = [ { write = { path = "fix.py", content = "x = 1\n" } }, { text = "done" } ]
//! [lanes]
//! local = 1
//! [store]
//! retain = "30d"                   # compact finished battles/runs and events older than this
//! ```
//!
//! Decoding is strict: an unknown key, a key that belongs to another kind
//! (`base_url` on a `cli` agent), a missing required key or a bad value is
//! an `invalid_input` error naming its path (`agents.local.base_url`), and
//! every problem of the file is reported at once.

use super::parse::StreamFormat;
use super::preset::CliPreset;
use super::script::Script;
use crate::error::Error;
use crate::names::macros::named_enum;
use crate::task::Lane;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// The kinds of agent a config can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AgentKind {
    /// A CLI agent run as a process group (`preset` says which).
    Cli,
    /// An OpenAI-compatible HTTP endpoint (feature `http`).
    Openai,
    /// A scripted agent.
    Scripted,
    /// coderig's own coding agent on a model server (feature `http`).
    Native,
}
named_enum!(AgentKind, "agent kind", {
    Cli => "cli",
    Openai => "openai" | "open_ai",
    Scripted => "scripted",
    Native => "native",
});

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// The agents by identity (`[agents.<identity>]`).
    #[serde(default)]
    pub agents: BTreeMap<String, AgentSpec>,
    /// Lane capacities across every server sharing the store
    /// (`[lanes] local = 1`); lanes not named keep the store's default.
    #[serde(default)]
    pub lanes: BTreeMap<Lane, u32>,
    /// The sandbox every process of this rig starts under (`[sandbox]
    /// mode = "enforce" | "auto" | "off"`, default `enforce`).
    #[serde(default)]
    pub sandbox: crate::sandbox::SandboxConfig,
    /// What the store keeps (`[store] retain = "30d"`).
    #[serde(default)]
    pub store: StoreConfig,
}

/// The `[store]` table: what the store keeps.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// How long finished battles and runs and old events stay in the store
    /// (`retain = "30d"`): a rig that runs workers compacts what is older
    /// at start and every hour (`Store::compact`). Absent: kept forever.
    #[serde(default, deserialize_with = "super::duration::deserialize_opt")]
    pub retain: Option<Duration>,
}

/// One `[agents.<identity>]` table. Which keys are allowed depends on
/// `kind` (see [`ConfigFile::validate`]; the schema lists every key, each
/// described with the kinds that take it).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentSpec {
    /// What the agent is.
    pub kind: AgentKind,
    /// The lane its turns run in (default `cloud`; `local` shares the
    /// global local lane).
    #[serde(default)]
    pub lane: Option<Lane>,
    /// The default wall-clock timeout of a turn.
    #[serde(default, deserialize_with = "super::duration::deserialize_opt")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::json::schema::DurationInput>))]
    pub timeout: Option<Duration>,
    /// The default idle timeout of a turn.
    #[serde(default, deserialize_with = "super::duration::deserialize_opt")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::json::schema::DurationInput>))]
    pub idle_timeout: Option<Duration>,
    /// Environment added to the process (cli) or sent nowhere (others).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Models the agent is known to serve (listed by `agents()` when the
    /// backend cannot say).
    #[serde(default)]
    pub models: Vec<String>,
    /// cli: `claude | qwen | codex | opencode | custom`.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::agent::preset::CliPreset>))]
    pub preset: Option<String>,
    /// cli: the binary (default: the preset's binary on `PATH`).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub command: Option<PathBuf>,
    /// cli `custom`: the arguments, with `{prompt}`, `{model}`, `{workdir}`.
    #[serde(default)]
    pub args: Option<Vec<String>>,
    /// cli: arguments appended to the preset's own.
    #[serde(default)]
    pub extra_args: Vec<String>,
    /// cli `custom`: the stream format of its stdout
    /// (`claude-stream-json | codex-json | opencode-json | text`).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::agent::parse::StreamFormat>))]
    pub format: Option<String>,
    /// cli `custom`: whether its arguments really enforce read-only turns
    /// (otherwise a `read_only` turn is refused as `unavailable` when the
    /// sandbox does not confine its writes either).
    #[serde(default)]
    pub enforces_read_only: bool,
    /// cli: directories the CLI writes its own state to, kept writable in
    /// its sandbox at `read_only` and `edit` (absolute, or `~/…` under the
    /// turn's `HOME`; created when missing). A `custom` agent's only state
    /// dirs; added to a preset's own (see
    /// [`CliPreset::state_paths`]).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<String>))]
    pub state_dirs: Vec<PathBuf>,
    /// cli: what the sandbox lets the CLI reach at `read_only` and `edit`
    /// (native: what its `run` commands may reach, default `deny`):
    /// `allow`, `deny` or `loopback:PORT[,PORT…]`. Default: derived — the
    /// ports of the loopback URLs (`http://127.0.0.1:P`, `localhost:P`,
    /// `[::1]:P`) in its `env` values and arguments, else `allow` (a cloud
    /// agent must reach its provider, and the kernel filters TCP by port,
    /// not by host).
    #[serde(default)]
    pub network: Option<crate::sandbox::NetworkPolicy>,
    /// openai, native: the base URL, ending in `/v1`.
    #[serde(default)]
    pub base_url: Option<String>,
    /// openai, native: the API key (prefer `api_key_env`).
    #[serde(default)]
    pub api_key: Option<String>,
    /// openai, native: the environment variable holding the API key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// openai, native: the model when the turn names none.
    #[serde(default)]
    pub model: Option<String>,
    /// openai, native: extra HTTP headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// native: the wire API, `chat` (default) | `anthropic` | `responses`.
    #[serde(default)]
    pub api: Option<crate::agent::native::Api>,
    /// native: the tool set, `coderig` (default) | `bash` (only `run` and
    /// `finish`).
    #[serde(default)]
    pub tools: Option<crate::agent::native::ToolsMode>,
    /// native: `read_file` shows `LINE#HH|` anchors and `edit_lines` is
    /// offered.
    #[serde(default)]
    pub hashline: bool,
    /// native: the most model requests of a turn (default 50).
    #[serde(default)]
    pub max_steps: Option<u32>,
    /// native: the turn stops cleanly (`max_wall`) after this long.
    #[serde(default, deserialize_with = "super::duration::deserialize_opt")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::json::schema::DurationInput>))]
    pub max_wall: Option<Duration>,
    /// native: the turn stops (`max_tokens`) once it has spent this many
    /// tokens (input, cached input and output).
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// native: the turn stops (`max_cost`) past this cost, from `prices`
    /// or the server's reported cost.
    #[serde(default)]
    pub max_cost_usd: Option<f64>,
    /// native: the most output tokens of one request (default 4,096, and
    /// never more than a quarter of the context window).
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    /// native: the model's context window in tokens (default: asked of
    /// the server — vLLM `/v1/models`, llama.cpp `/props`, Ollama
    /// `/api/show`).
    #[serde(default)]
    pub context_window: Option<u32>,
    /// native: sampling options added to every request (`temperature`,
    /// `top_p`, `top_k`, `seed`, ...).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub sampling: serde_json::Map<String, serde_json::Value>,
    /// native: US dollars per million tokens, for `max_cost_usd` and the
    /// outcome's cost.
    #[serde(default)]
    pub prices: Option<Prices>,
    /// native: replaces coderig's system prompt.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// native: per-model overrides of `system_prompt`, `sampling` and
    /// `context_window`, by model name.
    #[serde(default)]
    pub model_overrides: BTreeMap<String, ModelOverride>,
    /// native: the default and longest timeout of one `run` command
    /// (default 5 minutes).
    #[serde(default, deserialize_with = "super::duration::deserialize_opt")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::json::schema::DurationInput>))]
    pub run_timeout: Option<Duration>,
    /// scripted: the script played for every model without its own.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<crate::agent::script::ScriptAction>>))]
    pub script: Option<Script>,
    /// scripted: scripts by model name.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = BTreeMap<String, Vec<crate::agent::script::ScriptAction>>))]
    pub scripts: BTreeMap<String, Script>,
}

/// Which keys each kind may set (beyond `kind`, `lane`, `timeout`,
/// `idle_timeout`, `env`, `models`, allowed for all).
fn key_kinds(key: &str) -> Option<&'static [AgentKind]> {
    use AgentKind::*;
    match key {
        "preset" | "command" | "args" | "extra_args" | "format" | "enforces_read_only"
        | "state_dirs" => Some(&[Cli]),
        "network" => Some(&[Cli, Native]),
        "base_url" | "api_key" | "api_key_env" | "model" | "headers" => Some(&[Openai, Native]),
        "script" | "scripts" => Some(&[Scripted]),
        "api" | "tools" | "hashline" | "max_steps" | "max_wall" | "max_tokens" | "max_cost_usd"
        | "max_output_tokens" | "context_window" | "sampling" | "prices" | "system_prompt"
        | "model_overrides" | "run_timeout" => Some(&[Native]),
        _ => None,
    }
}

impl ConfigFile {
    /// Decodes and validates a TOML document (feature `runtime`, which
    /// brings the `toml` parser).
    #[cfg(feature = "runtime")]
    pub fn from_toml_str(text: &str) -> Result<ConfigFile, Error> {
        let value: toml::Value = toml::from_str(text).map_err(|e| {
            Error::invalid_input(format!(
                "coderig.toml is not valid TOML: {}",
                e.message().trim()
            ))
        })?;
        let json = serde_json::to_value(value).map_err(|e| Error::internal(e.to_string()))?;
        ConfigFile::from_json(json)
    }

    /// Decodes and validates the JSON form of the file (what the bindings
    /// pass as `agents=`).
    pub fn from_json(value: serde_json::Value) -> Result<ConfigFile, Error> {
        let problems = ConfigFile::key_problems(&value);
        if !problems.is_empty() {
            return Err(Error::invalid_input(problems.join("; ")));
        }
        let config: ConfigFile = crate::json::decode(value)?;
        config.validate()?;
        Ok(config)
    }

    /// Keys set on an agent of the wrong kind, checked before decoding so
    /// that the message names the kind they belong to.
    fn key_problems(value: &serde_json::Value) -> Vec<String> {
        let mut problems = vec![];
        let Some(agents) = value.get("agents").and_then(|a| a.as_object()) else {
            return problems;
        };
        for (identity, spec) in agents {
            let Some(spec) = spec.as_object() else {
                continue;
            };
            let Some(kind) = spec
                .get("kind")
                .and_then(|k| k.as_str())
                .and_then(|k| k.parse::<AgentKind>().ok())
            else {
                continue;
            };
            for key in spec.keys() {
                if let Some(owners) = key_kinds(key).filter(|owners| !owners.contains(&kind)) {
                    let owners: Vec<String> = owners.iter().map(|o| format!("\"{o}\"")).collect();
                    problems.push(format!(
                        "agents.{identity}.{key}: `{key}` is a key of kind {} agents, not \"{kind}\"",
                        owners.join(" and ")
                    ));
                }
            }
        }
        problems
    }

    /// Checks what decoding cannot: identities, presets, formats, the keys
    /// each kind requires.
    pub fn validate(&self) -> Result<(), Error> {
        let mut problems = vec![];
        if let Some(retain) = self.store.retain {
            if let Err(e) = crate::store::check_retain(retain) {
                problems.push(format!("store.retain: {}", e.message()));
            }
        }
        for lane in self.lanes.keys().filter(|l| !l.takes_capacity()) {
            problems.push(format!(
                "lanes.{lane}: the {lane} lane takes no capacity: run drivers are never limited (only local and cloud are)"
            ));
        }
        for (identity, spec) in &self.agents {
            let at = format!("agents.{identity}");
            if spec.lane == Some(Lane::Driver) {
                problems.push(format!(
                    "{at}.lane: \"driver\" is the run drivers' own lane; an agent runs in local or cloud"
                ));
            }
            if identity.is_empty()
                || !identity
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            {
                problems.push(format!(
                    "{at}: an identity is letters, digits, `-`, `_` and `.`"
                ));
            }
            match spec.kind {
                AgentKind::Cli => {
                    for (i, dir) in spec.state_dirs.iter().enumerate() {
                        let text = dir.to_string_lossy();
                        if !(dir.is_absolute() || text.starts_with("~/")) {
                            problems.push(format!(
                                "{at}.state_dirs[{i}]: {text:?} is relative: give an absolute path or one under ~/"
                            ));
                        }
                    }
                    let presets = CliPreset::NAMES;
                    match spec.preset.as_deref() {
                        None => problems.push(format!(
                            "{at}.preset: required for kind \"cli\" (one of: {})",
                            presets.join(", ")
                        )),
                        Some(p) if !presets.contains(&p) => problems.push(format!(
                            "{at}.preset: unknown preset {p:?}; expected one of: {}",
                            presets.join(", ")
                        )),
                        Some("custom") => {
                            if spec.command.is_none() {
                                problems
                                    .push(format!("{at}.command: required for the custom preset"));
                            }
                            if spec.args.is_none() {
                                problems.push(format!("{at}.args: required for the custom preset (use {{prompt}}, {{model}}, {{workdir}})"));
                            }
                            let formats = StreamFormat::NAMES;
                            match spec.format.as_deref() {
                                Some(f) if formats.contains(&f) => {}
                                Some(f) => problems.push(format!(
                                    "{at}.format: unknown format {f:?}; expected one of: {}",
                                    formats.join(", ")
                                )),
                                None => problems.push(format!(
                                    "{at}.format: required for the custom preset (one of: {})",
                                    formats.join(", ")
                                )),
                            }
                        }
                        Some(_) => {
                            for (key, set) in [
                                ("args", spec.args.is_some()),
                                ("format", spec.format.is_some()),
                                ("enforces_read_only", spec.enforces_read_only),
                            ] {
                                if set {
                                    problems.push(format!("{at}.{key}: only the custom preset takes `{key}` (use extra_args)"));
                                }
                            }
                        }
                    }
                }
                AgentKind::Openai | AgentKind::Native => {
                    if spec.kind == AgentKind::Native {
                        problems.extend(native_problems(spec, &at));
                    }
                    match spec.base_url.as_deref() {
                        None => problems.push(format!("{at}.base_url: required for kind \"{}\" (e.g. \"http://127.0.0.1:8080/v1\")", spec.kind)),
                        Some(u) if !(u.starts_with("http://") || u.starts_with("https://")) => {
                            problems.push(format!("{at}.base_url: {u:?} is not an http(s) URL"))
                        }
                        Some(_) => {}
                    }
                    if spec.api_key.is_some() && spec.api_key_env.is_some() {
                        problems.push(format!(
                            "{at}: set one of api_key and api_key_env, not both"
                        ));
                    }
                }
                AgentKind::Scripted => {
                    if spec.script.is_none() && spec.scripts.is_empty() {
                        problems.push(format!(
                            "{at}.script: required for kind \"scripted\" (or `scripts` by model)"
                        ));
                    }
                }
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::invalid_input(problems.join("; ")))
        }
    }
}

/// US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Prices {
    /// Uncached input.
    #[serde(default)]
    pub input: f64,
    /// Output.
    #[serde(default)]
    pub output: f64,
    /// Input read from the provider's cache (default: the input price).
    #[serde(default)]
    pub cache_read: Option<f64>,
}

impl Prices {
    /// The cost of `usage` at these prices.
    pub fn cost(&self, usage: &crate::agent::Usage) -> f64 {
        let m = 1_000_000.0;
        usage.input as f64 * self.input / m
            + usage.output as f64 * self.output / m
            + usage.cache_read as f64 * self.cache_read.unwrap_or(self.input) / m
    }
}

/// What one model overrides of the agent's table.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ModelOverride {
    /// Replaces the system prompt for this model.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Sampling options added over the agent's.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub sampling: serde_json::Map<String, serde_json::Value>,
    /// This model's context window.
    #[serde(default)]
    pub context_window: Option<u32>,
}

/// What is wrong with a native table that decoding cannot see, each as
/// `agents.<identity>.<key>: ...`.
fn native_problems(spec: &AgentSpec, at: &str) -> Vec<String> {
    let mut out = vec![];
    if spec.max_steps == Some(0) {
        out.push(format!("{at}.max_steps: must be at least 1"));
    }
    if spec.max_output_tokens == Some(0) {
        out.push(format!("{at}.max_output_tokens: must be at least 1"));
    }
    if let Some(w) = spec.context_window {
        if w < 1024 {
            out.push(format!(
                "{at}.context_window: {w} tokens cannot hold the system prompt and the tools; give at least 1024"
            ));
        }
    }
    if let Some(c) = spec.max_cost_usd {
        if !(c.is_finite() && c > 0.0) {
            out.push(format!("{at}.max_cost_usd: must be a positive number"));
        }
    }
    if spec.max_cost_usd.is_some() && spec.prices.is_none() {
        out.push(format!(
            "{at}.max_cost_usd: needs `prices` (dollars per million tokens) to count the cost"
        ));
    }
    for (model, o) in &spec.model_overrides {
        if let Some(w) = o.context_window.filter(|w| *w < 1024) {
            out.push(format!(
                "{at}.model_overrides.{model}.context_window: {w} is below 1024"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::NetworkPolicy;
    use serde_json::json;

    fn cli(extra: serde_json::Value) -> Result<ConfigFile, Error> {
        let mut agent = json!({"kind": "cli", "preset": "custom", "command": "sh",
                               "args": ["{prompt}"], "format": "text"});
        agent
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        ConfigFile::from_json(json!({"agents": {"a": agent}}))
    }

    #[test]
    fn the_driver_lane_takes_no_capacity_and_no_agent() {
        let e = ConfigFile::from_json(json!({"lanes": {"cloud": 1, "driver": 2}})).unwrap_err();
        assert!(e.message().contains("lanes.driver"), "{}", e.message());
        let ok = ConfigFile::from_json(json!({"lanes": {"local": 2, "cloud": 1}})).unwrap();
        assert_eq!(ok.lanes[&Lane::Cloud], 1);
        let e = cli(json!({"lane": "driver"})).unwrap_err();
        assert!(e.message().contains("agents.a.lane"), "{}", e.message());
        assert!(cli(json!({"lane": "local"})).is_ok());
    }

    #[test]
    fn state_dirs_and_network_decode_and_validate() {
        let config =
            cli(json!({"state_dirs": ["~/.a", "/b"], "network": "loopback:9000"})).unwrap();
        let spec = &config.agents["a"];
        assert_eq!(spec.state_dirs, [PathBuf::from("~/.a"), "/b".into()]);
        assert_eq!(spec.network, Some(NetworkPolicy::Ports(vec![9000])));
        assert_eq!(cli(json!({})).unwrap().agents["a"].network, None);
        for (extra, path) in [
            (json!({"state_dirs": ["rel/dir"]}), "agents.a.state_dirs[0]"),
            (
                json!({"state_dirs": ["/ok", "~x"]}),
                "agents.a.state_dirs[1]",
            ),
            (json!({"network": "loopback:"}), "agents.a.network"),
            (json!({"network": "sometimes"}), "agents.a.network"),
        ] {
            let e = cli(extra.clone()).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidInput, "{extra}");
            let text = format!("{} {:?}", e.message(), e.details());
            assert!(text.contains(path), "{extra}: {text}");
        }
        // A preset takes them too (added to its own state dirs).
        let preset = ConfigFile::from_json(json!({"agents": {"c": {
            "kind": "cli", "preset": "codex", "state_dirs": ["~/.x"], "network": "allow"}}}))
        .unwrap();
        assert_eq!(preset.agents["c"].network, Some(NetworkPolicy::Allow));
        // They are CLI keys.
        let e = ConfigFile::from_json(json!({"agents": {"s": {
            "kind": "scripted", "script": [{"text": "x"}], "network": "deny"}}}))
        .unwrap_err();
        assert!(
            e.message().contains("`network` is a key of kind \"cli\""),
            "{}",
            e.message()
        );
    }
}
