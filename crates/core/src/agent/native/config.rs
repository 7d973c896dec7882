//! The `kind = "native"` table of `coderig.toml` (pure): how a native
//! agent reaches its server and the limits of its loop.
//!
//! ```toml
//! [agents.qwen-local]
//! kind = "native"
//! base_url = "http://127.0.0.1:8080/v1"   # llama.cpp, vLLM, Ollama, LM Studio
//! api = "chat"                            # chat | anthropic | responses
//! model = "qwen3-coder-30b"
//! tools = "coderig"                       # coderig | bash
//! max_steps = 50
//! max_wall = "20m"
//! context_window = 32768                  # else asked of the server
//! sampling = { temperature = 0.2 }
//! ```

// The price and per-model tables are declared with the table itself
// (`agent::config`), which this room reads and which must not read it back.
pub use crate::agent::config::{ModelOverride, Prices};

use super::{Api, ToolsMode};
use crate::agent::config::AgentSpec;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// The default most model requests of a turn.
pub const DEFAULT_MAX_STEPS: u32 = 50;
/// The default most output tokens of one request.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 4096;
/// The default (and longest) timeout of one `run` command.
pub const DEFAULT_RUN_TIMEOUT: Duration = Duration::from_secs(300);

/// The loop's hard limits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// The most model requests (default 50).
    pub max_steps: u32,
    /// The turn stops cleanly after this long.
    pub max_wall: Option<Duration>,
    /// The turn stops once it spent this many tokens (input, cached input
    /// and output).
    pub max_tokens: Option<u64>,
    /// The turn stops past this cost.
    pub max_cost_usd: Option<f64>,
    /// The most output tokens of one request.
    pub max_output_tokens: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_steps: DEFAULT_MAX_STEPS,
            max_wall: None,
            max_tokens: None,
            max_cost_usd: None,
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
        }
    }
}

/// Everything a native agent is configured with.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NativeConfig {
    /// The API root including the version (`http://127.0.0.1:8080/v1`).
    pub base_url: String,
    /// The wire API.
    pub api: Api,
    /// The model of turns that name none.
    pub model: Option<String>,
    /// The key, sent as a bearer token (Chat, Responses) or `x-api-key`
    /// (Anthropic).
    pub api_key: Option<String>,
    /// The variable to read the key from at each turn.
    pub api_key_env: Option<String>,
    /// Extra request headers.
    pub headers: BTreeMap<String, String>,
    /// The tool set.
    pub tools: ToolsMode,
    /// Hashline anchors in `read_file` and the `edit_lines` tool.
    pub hashline: bool,
    /// The loop's limits.
    pub limits: Limits,
    /// The context window (`None`: asked of the server).
    pub context_window: Option<u32>,
    /// Sampling options added to every request.
    pub sampling: Map<String, Value>,
    /// Prices, for the cost limit and the outcome's cost.
    pub prices: Option<Prices>,
    /// Replaces coderig's system prompt.
    pub system_prompt: Option<String>,
    /// Per-model overrides.
    pub model_overrides: BTreeMap<String, ModelOverride>,
    /// The network `run` commands may reach (default deny).
    pub network: Option<crate::sandbox::NetworkPolicy>,
    /// The default and longest timeout of one `run`.
    pub run_timeout: Option<Duration>,
    /// Wall-clock limit of a turn that sets none (a hard error, unlike
    /// `limits.max_wall`, which ends the turn cleanly).
    pub timeout: Option<Duration>,
    /// The turn fails as hung when the server sends nothing for this long.
    pub idle_timeout: Option<Duration>,
    /// Environment added to `run` commands.
    pub env: BTreeMap<String, String>,
}

impl NativeConfig {
    /// A config for `base_url` speaking `api`, every other field at its
    /// default.
    pub fn new(base_url: impl Into<String>, api: Api) -> Self {
        NativeConfig {
            base_url: base_url.into(),
            api,
            ..Self::default()
        }
    }

    /// Sets the default model.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The config of a validated `kind = "native"` table.
    pub fn from_spec(spec: &AgentSpec) -> Self {
        let d = Limits::default();
        NativeConfig {
            base_url: spec.base_url.clone().unwrap_or_default(),
            api: spec.api.unwrap_or_default(),
            model: spec.model.clone(),
            api_key: spec.api_key.clone(),
            api_key_env: spec.api_key_env.clone(),
            headers: spec.headers.clone(),
            tools: spec.tools.unwrap_or_default(),
            hashline: spec.hashline,
            limits: Limits {
                max_steps: spec.max_steps.unwrap_or(d.max_steps),
                max_wall: spec.max_wall,
                max_tokens: spec.max_tokens,
                max_cost_usd: spec.max_cost_usd,
                max_output_tokens: spec.max_output_tokens.unwrap_or(d.max_output_tokens),
            },
            context_window: spec.context_window,
            sampling: spec.sampling.clone(),
            prices: spec.prices,
            system_prompt: spec.system_prompt.clone(),
            model_overrides: spec.model_overrides.clone(),
            network: spec.network.clone(),
            run_timeout: spec.run_timeout,
            timeout: spec.timeout,
            idle_timeout: spec.idle_timeout,
            env: spec.env.clone(),
        }
    }

    /// The override of `model`, if any.
    pub fn override_for(&self, model: &str) -> Option<&ModelOverride> {
        self.model_overrides.get(model)
    }

    /// The sampling options of a request to `model`: the agent's, then the
    /// model's override over them.
    pub fn sampling_for(&self, model: &str) -> Map<String, Value> {
        let mut out = self.sampling.clone();
        if let Some(o) = self.override_for(model) {
            for (k, v) in &o.sampling {
                out.insert(k.clone(), v.clone());
            }
        }
        out
    }

    /// The configured context window of `model` (its override's, else the
    /// agent's), `None` when it must be asked of the server.
    pub fn window_for(&self, model: &str) -> Option<u32> {
        self.override_for(model)
            .and_then(|o| o.context_window)
            .or(self.context_window)
    }

    /// Whether the server is on this machine (`localhost`, `127.x`, `::1`):
    /// such an agent's default lane is `local`.
    pub fn is_local(&self) -> bool {
        is_loopback_url(&self.base_url)
    }
}

/// Whether `url`'s host is a loopback name or address.
pub fn is_loopback_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or(url);
    let authority = rest.split('/').next().unwrap_or_default();
    let authority = authority.rsplit('@').next().unwrap_or_default();
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next().unwrap_or_default()
    } else {
        authority.split(':').next().unwrap_or_default()
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::config::ConfigFile;
    use serde_json::json;

    fn spec(extra: Value) -> Result<AgentSpec, crate::Error> {
        let mut agent = json!({"kind": "native", "base_url": "http://127.0.0.1:9/v1"});
        for (k, v) in extra.as_object().unwrap() {
            agent[k] = v.clone();
        }
        let c = ConfigFile::from_json(json!({"agents": {"n": agent}}))?;
        Ok(c.agents["n"].clone())
    }

    #[test]
    fn a_full_table_decodes_into_the_config() {
        let s = spec(
            json!({"api": "anthropic", "tools": "bash", "hashline": true,
            "max_steps": 7, "max_wall": "2m", "max_tokens": 1000, "max_output_tokens": 512,
            "context_window": 4096, "sampling": {"temperature": 0.1},
            "prices": {"input": 1.0, "output": 2.0}, "max_cost_usd": 0.5,
            "model_overrides": {"m": {"sampling": {"top_k": 20}, "context_window": 2048}},
            "network": "deny", "run_timeout": "30s"}),
        )
        .unwrap();
        let c = NativeConfig::from_spec(&s);
        assert_eq!(c.api, Api::Anthropic);
        assert_eq!(c.tools, ToolsMode::Bash);
        assert!(c.hashline);
        assert_eq!(c.limits.max_steps, 7);
        assert_eq!(c.limits.max_wall, Some(Duration::from_secs(120)));
        assert_eq!(c.window_for("m"), Some(2048));
        assert_eq!(c.window_for("other"), Some(4096));
        assert_eq!(c.sampling_for("m")["top_k"], 20);
        assert_eq!(c.sampling_for("m")["temperature"], 0.1);
        assert!(c.is_local());
    }

    #[test]
    fn bad_tables_are_refused_with_the_key() {
        for (extra, needle) in [
            (json!({"max_steps": 0}), "max_steps"),
            (json!({"context_window": 100}), "context_window"),
            (json!({"max_cost_usd": 1.0}), "needs `prices`"),
            (json!({"api": "grpc"}), "native api"),
            (json!({"tools": "all"}), "native tools"),
            (json!({"script": [{"text": "x"}]}), "kind \"scripted\""),
            (json!({"preset": "claude"}), "kind \"cli\""),
        ] {
            let e = spec(extra.clone()).unwrap_err();
            assert!(e.message().contains(needle), "{extra}: {}", e.message());
        }
        // Native keys on another kind name the native kind.
        let e = ConfigFile::from_json(json!({"agents": {"o": {"kind": "openai",
            "base_url": "http://x/v1", "max_steps": 3}}}))
        .unwrap_err();
        assert!(e.message().contains("kind \"native\""), "{}", e.message());
    }

    #[test]
    fn loopback_urls_are_local() {
        for (url, local) in [
            ("http://127.0.0.1:8080/v1", true),
            ("http://localhost:11434/v1", true),
            ("http://[::1]:8000/v1", true),
            ("http://user@127.0.0.2/v1", true),
            ("https://api.openai.com/v1", false),
            ("http://10.0.0.5:8080/v1", false),
            ("http://localhost.evil.com/v1", false),
        ] {
            assert_eq!(is_loopback_url(url), local, "{url}");
        }
    }
}
