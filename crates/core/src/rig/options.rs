//! What a face's `Rig` is made with (`coderig.Rig(...)` in Python, `new
//! Rig(options)` in Node), turned into a [`RigConfig`] in one place: the
//! agents read, the sandbox mode set on them, the project roots resolved
//! by the one policy, the data directory made absolute.

use super::{resolve_project_roots, RigConfig, DEFAULT_DATA_DIR};
use crate::agent::Registry;
use crate::error::Error;
use crate::sandbox::SandboxConfig;
use serde::Deserialize;
use serde_json::Value;
use std::path::PathBuf;

/// The options of a face's `Rig`, decoded strictly (an unknown key is
/// refused; `null` is "not given").
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RigOptions {
    /// Where the embedded store, worktrees, artifacts and results live
    /// (default `./.coderig`); made absolute when the rig is made, so a
    /// later change of directory does not move it.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub data_dir: Option<PathBuf>,
    /// The store: `postgres://…` to share one PostgreSQL, an SQLite URL or
    /// path; default SQLite in the data directory.
    #[serde(default)]
    pub db: Option<String>,
    /// The `coderig.toml` to read the agents from (not with `agents`);
    /// default `./coderig.toml` when it exists, else no agents.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub config: Option<PathBuf>,
    /// The agents as the config file's `[agents]` table (snake_case keys,
    /// as in the file; not with `config`).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<std::collections::BTreeMap<String, crate::agent::config::AgentSpec>>))]
    pub agents: Option<Value>,
    /// Where battles' projects, command steps' `cwd` and agent steps'
    /// `workdir` must lie; none given: the current directory.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<String>>))]
    pub project_roots: Option<Vec<PathBuf>>,
    /// The mode every process the rig starts runs under — `enforce`
    /// (default: refuse what the kernel cannot confine), `auto` or `off`,
    /// or the `[sandbox]` table (`{"mode": "auto"}`); it replaces the
    /// config file's.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::json::schema::SandboxInput>))]
    pub sandbox: Option<Value>,
}

impl RigOptions {
    /// Decodes options from a JSON object (`null`: none).
    pub fn from_json(value: Value) -> Result<RigOptions, Error> {
        if value.is_null() {
            return Ok(RigOptions::default());
        }
        crate::json::decode_object(value)
    }

    /// The rig these options make, and the config file its agents came
    /// from (`None`: none was read). Errors: both `config` and `agents`,
    /// a bad config or agents table (the key named), a bad `sandbox`, a
    /// project root that is no directory — `invalid_input` at its path;
    /// an unreadable config file `io`.
    pub fn into_config(self) -> Result<(RigConfig, Option<PathBuf>), Error> {
        let (mut agents, file) = Registry::open(self.config.as_deref(), self.agents)?;
        if let Some(sandbox) = self.sandbox {
            // On the registry itself: turns run before (or without) the
            // rest of the runtime opening.
            agents.set_sandbox_mode(SandboxConfig::from_json(sandbox)?.mode);
        }
        let project_roots = resolve_project_roots(&self.project_roots.unwrap_or_default())?;
        let data_dir = self
            .data_dir
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
        let mut config = RigConfig::new(std::path::absolute(&data_dir).unwrap_or(data_dir));
        config.db = self.db.filter(|db| !db.is_empty());
        config.project_roots = project_roots;
        config.agents = agents;
        Ok((config, file))
    }
}
