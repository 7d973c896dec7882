//! `BattleSpec`: what starting a battle asks for, decoded strictly from JSON
//! (`POST /api/battles`, `Rig.start_battle(**spec)`, the CLI's `--json`).
//!
//! ```json
//! {"battle_type": "coding", "prompt": "Fix the failing test in calc.py",
//!  "project": "/abs/path/to/repo", "base": "HEAD",
//!  "contestants": [{"identity": "claude", "model": "sonnet"},
//!                  {"identity": "qwen", "model": "qwen3-coder", "instruction": "Add a regression test."}],
//!  "judge": {"identity": "local", "model": "qwen3"},
//!  "oracle": {"repro": "python3 -m pytest -q tests/test_calc.py", "suite": "python3 -m pytest -q", "timeout": "5m"},
//!  "contestant_timeout": "20m", "keep_worktrees": false}
//! ```
//!
//! Guarantees of [`BattleSpec::from_json`]:
//! - every problem of the spec is reported at once, in one `invalid_input`
//!   error: its message joins them (`` `path`: problem``, `; `-separated,
//!   in document order), `details.problems` lists them as `{path, message}`
//!   and `details.path` is the first one's path;
//! - unknown fields are refused, at every level; `null` is "not given";
//! - `battle_type` is `coding` or `qa` (aliases of [`BattleType`] accepted);
//!   `prompt` is not blank; `project` is required for `coding`; the
//!   project and the oracle's commands have no NUL character (no path or
//!   command can hold one);
//! - `base` is `"snapshot"` (the user's working tree as it is) or a
//!   revision (default `HEAD`): not blank, no whitespace or control
//!   characters, not starting with `-`, no `..` (a range is no commit);
//! - `contestants` are 2 to 6 `{identity, model, instruction?}` objects,
//!   identity and model non-blank, no pair twice and no two pairs with the
//!   same results folder ([`super::contestant_dir`]); `instruction` (that
//!   contestant's own, appended to the prompt for it alone:
//!   [`contestant_prompt`]) is a non-blank string of at most
//!   [`MAX_INSTRUCTION_CHARS`] characters; `judge` is one
//!   `{identity, model}` pair (no instruction), required;
//! - `oracle` has `repro`, `suite` or both (non-blank shell commands), a
//!   `timeout` (default [`DEFAULT_ORACLE_TIMEOUT`]) and a `network`
//!   (`"deny"` by default, `"allow"`, or `"loopback:PORT[,PORT...]"`, as
//!   [`NetworkPolicy`] parses it: what the sandboxed commands may reach);
//!   `qa` battles have no
//!   patch, so `base` and `oracle` are refused there (`keep_worktrees` is
//!   accepted and means nothing);
//! - durations are seconds (a number) or strings such as `"90s"`, `"20m"`
//!   ([`crate::agent::duration::parse_duration`]), and more than zero;
//!   `contestant_timeout` defaults to [`DEFAULT_CONTESTANT_TIMEOUT`].
//!
//! What needs the runtime's registry and roots — that the identities are
//! configured, that `project` is a git repository under a project root — is
//! not checked here; [`BattleSpec::validate_against`] checks identities
//! against a list, purely.

use super::lane::BattleType;
use super::paths::contestant_dir;
use crate::error::Error;
use crate::json::describe;
use crate::json::problems::{join, Problems};
use crate::sandbox::NetworkPolicy;
use serde_json::{json, Value};
use std::time::Duration;

/// A contestant's run is stopped after this long unless the spec says.
pub const DEFAULT_CONTESTANT_TIMEOUT: Duration = Duration::from_secs(20 * 60);
/// Each oracle command is stopped after this long unless the spec says.
pub const DEFAULT_ORACLE_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// The fewest and most contestants of a battle.
pub const CONTESTANTS: std::ops::RangeInclusive<usize> = 2..=6;
/// The longest contestant `instruction`, in characters (Unicode scalar
/// values, as JSON Schema's `maxLength` counts them).
pub const MAX_INSTRUCTION_CHARS: usize = 16 * 1024;

/// The prompt a contestant's agent receives: the battle's prompt, then —
/// when the contestant has an instruction of its own — a blank line and the
/// instruction (`prompt + "\n\n" + instruction`).
pub fn contestant_prompt(prompt: &str, instruction: Option<&str>) -> String {
    match instruction {
        Some(instruction) => format!("{prompt}\n\n{instruction}"),
        None => prompt.to_owned(),
    }
}

/// An agent by its identity (a configured agent) and model.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AgentRef {
    /// The identity of a configured agent.
    pub identity: String,
    /// The model it runs.
    pub model: String,
}

impl AgentRef {
    /// `identity/model`, as the judge prompts name contestants.
    pub fn label(&self) -> String {
        format!("{}/{}", self.identity, self.model)
    }
}

/// One contestant of a battle: its agent and model, and the instruction it
/// alone gets after the battle's prompt.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ContestantSpec {
    /// The agent and model.
    pub agent: AgentRef,
    /// Appended to the battle's prompt for this contestant only
    /// ([`contestant_prompt`]); `None`: the prompt alone.
    pub instruction: Option<String>,
}

impl ContestantSpec {
    /// The prompt this contestant's agent receives ([`contestant_prompt`]).
    pub fn prompt(&self, battle_prompt: &str) -> String {
        contestant_prompt(battle_prompt, self.instruction.as_deref())
    }
}

impl From<AgentRef> for ContestantSpec {
    /// A contestant without an instruction of its own.
    fn from(agent: AgentRef) -> Self {
        ContestantSpec {
            agent,
            instruction: None,
        }
    }
}

/// What the battle's contestants start from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Base {
    /// A revision of the project (`HEAD`, a branch, a commit).
    Ref(String),
    /// The user's working tree as it is, uncommitted and untracked changes
    /// included (`"snapshot"`).
    Snapshot,
}

impl Base {
    /// The JSON form: the revision, or `"snapshot"`.
    pub fn as_str(&self) -> &str {
        match self {
            Base::Ref(r) => r,
            Base::Snapshot => "snapshot",
        }
    }
}

/// The commands that test each contestant's patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OracleSpec {
    /// A command that fails on the base and passes once the task is done.
    pub repro: Option<String>,
    /// The project's test suite.
    pub suite: Option<String>,
    /// Each command's timeout.
    pub timeout: Duration,
    /// What the commands may reach over the network: `deny` (the default:
    /// a network namespace of their own, the host's listeners included
    /// unreachable), `allow`, or loopback ports.
    pub network: NetworkPolicy,
}

impl OracleSpec {
    /// Which commands are configured (for [`super::evidence::tier`]).
    pub fn commands(&self) -> super::evidence::OracleCommands {
        super::evidence::OracleCommands {
            repro: self.repro.is_some(),
            suite: self.suite.is_some(),
        }
    }
}

/// A battle to start, decoded and checked ([`BattleSpec::from_json`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BattleSpec {
    /// `coding` or `qa`.
    pub battle_type: BattleType,
    /// The task every contestant gets.
    pub prompt: String,
    /// The project path (required for `coding`).
    pub project: Option<String>,
    /// What coding contestants start from (`HEAD` unless given; always
    /// `HEAD` for `qa`, which has none).
    pub base: Base,
    /// 2 to 6 distinct contestants, in the given order.
    pub contestants: Vec<ContestantSpec>,
    /// The agent that writes digests and judges.
    pub judge: AgentRef,
    /// The oracle, when configured (`coding` only).
    pub oracle: Option<OracleSpec>,
    /// Each contestant's wall-clock limit.
    pub contestant_timeout: Duration,
    /// Keep the worktrees after archiving (default false).
    pub keep_worktrees: bool,
}

const FIELDS: &[&str] = &[
    "battle_type",
    "prompt",
    "project",
    "base",
    "contestants",
    "judge",
    "oracle",
    "contestant_timeout",
    "keep_worktrees",
];

// The problem list is shared with the runtime flow spec (`crate::json::problems`);
// only the battle-specific `{identity, model}` and contestant readers live here.
impl Problems {
    /// An `{identity, model}` object.
    fn agent(&mut self, value: &Value, at: &str) -> Option<AgentRef> {
        let Value::Object(object) = value else {
            self.add(
                at,
                format!(
                    "expected an object {{identity, model}}, got {}",
                    describe(value)
                ),
            );
            return None;
        };
        self.unknown_keys(object, at, &["identity", "model"]);
        self.agent_fields(object, at)
    }

    /// An `{identity, model, instruction?}` object.
    fn contestant(&mut self, value: &Value, at: &str) -> Option<ContestantSpec> {
        let Value::Object(object) = value else {
            self.add(
                at,
                format!(
                    "expected an object {{identity, model, instruction?}}, got {}",
                    describe(value)
                ),
            );
            return None;
        };
        self.unknown_keys(object, at, &["identity", "model", "instruction"]);
        let agent = self.agent_fields(object, at);
        let path = join(at, "instruction");
        let instruction = self.text(object.get("instruction"), &path);
        let chars = instruction.as_deref().map_or(0, |i| i.chars().count());
        if chars > MAX_INSTRUCTION_CHARS {
            self.add(
                path,
                format!("{chars} characters: an instruction has at most {MAX_INSTRUCTION_CHARS}"),
            );
            return None;
        }
        Some(ContestantSpec {
            agent: agent?,
            instruction,
        })
    }

    /// The `identity` and `model` of an agent object.
    fn agent_fields(
        &mut self,
        object: &serde_json::Map<String, Value>,
        at: &str,
    ) -> Option<AgentRef> {
        let mut field = |key: &str| {
            let path = join(at, key);
            let got = self.text(object.get(key), &path);
            if got.is_none() && object.get(key).is_none_or(Value::is_null) {
                self.add(path, "required");
            }
            got
        };
        let identity = field("identity");
        let model = field("model");
        Some(AgentRef {
            identity: identity?,
            model: model?,
        })
    }
}

/// Why `r` is no revision `base` may name, if it is not.
fn bad_revision(r: &str) -> Option<&'static str> {
    if r.starts_with('-') {
        Some("a revision must not start with `-`")
    } else if r.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Some("a revision has no whitespace or control characters")
    } else if r.contains("..") {
        Some("a range is no single commit (`..`)")
    } else {
        None
    }
}

impl BattleSpec {
    /// Decodes and checks a battle spec, with the guarantees of the module
    /// docs. Nothing is returned unless all of it is sound.
    pub fn from_json(value: &Value) -> Result<BattleSpec, Error> {
        let Value::Object(root) = value else {
            return Err(Error::invalid_at(
                ".",
                format!("a battle spec must be an object, got {}", describe(value)),
            ));
        };
        let mut p = Problems::default();
        p.unknown_keys(root, "", FIELDS);
        let get = |key: &str| root.get(key).filter(|v| !v.is_null());

        let battle_type = match get("battle_type") {
            None => {
                p.add("battle_type", "required: \"coding\" or \"qa\"");
                None
            }
            Some(Value::String(s)) => match s.parse::<BattleType>() {
                Ok(t) => Some(t),
                Err(e) => {
                    p.add("battle_type", e.to_string());
                    None
                }
            },
            Some(other) => {
                p.add(
                    "battle_type",
                    format!("expected a string, got {}", describe(other)),
                );
                None
            }
        };
        let prompt = p.text(get("prompt"), "prompt");
        if get("prompt").is_none() {
            p.add("prompt", "required: the task every contestant gets");
        }
        let project = p.os_text(get("project"), "project");
        if battle_type == Some(BattleType::Coding) && get("project").is_none() {
            p.add(
                "project",
                "required for a coding battle: the path of its git repository",
            );
        }
        let qa = battle_type == Some(BattleType::Qa);
        let base = match p.text(get("base"), "base") {
            _ if qa && get("base").is_some() => {
                p.add("base", "a qa battle has no base (only coding battles do)");
                Base::Ref("HEAD".into())
            }
            None => Base::Ref("HEAD".into()),
            Some(s) if s == "snapshot" => Base::Snapshot,
            Some(s) => {
                if let Some(why) = bad_revision(&s) {
                    p.add("base", format!("{s:?}: {why}"));
                }
                Base::Ref(s)
            }
        };

        let mut contestants = Vec::new();
        match get("contestants") {
            None => p.add(
                "contestants",
                "required: 2 to 6 {identity, model, instruction?} objects",
            ),
            Some(Value::Array(items)) => {
                let n = items.len();
                if !CONTESTANTS.contains(&n) {
                    p.add(
                        "contestants",
                        format!(
                            "{n} contestant{}: a battle needs 2 to 6",
                            if n == 1 { "" } else { "s" }
                        ),
                    );
                }
                let mut seen: Vec<(usize, AgentRef, Option<String>)> = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let at = format!("contestants[{i}]");
                    let Some(contestant) = p.contestant(item, &at) else {
                        continue;
                    };
                    let agent = &contestant.agent;
                    let dir = match contestant_dir(&agent.identity, &agent.model) {
                        Ok(dir) => Some(dir),
                        Err(e) => {
                            p.add(&at, e.to_string());
                            None
                        }
                    };
                    if let Some((j, _, _)) = seen.iter().find(|(_, a, _)| a == agent) {
                        p.add(
                            &at,
                            format!("duplicate of contestants[{j}] ({})", agent.label()),
                        );
                    } else if let Some((j, _, d)) =
                        seen.iter().find(|(_, _, d)| d.is_some() && *d == dir)
                    {
                        p.add(
                            &at,
                            format!(
                                "{} has the results folder `{}` of contestants[{j}]",
                                agent.label(),
                                d.as_deref().unwrap_or_default()
                            ),
                        );
                    }
                    seen.push((i, agent.clone(), dir));
                    contestants.push(contestant);
                }
            }
            Some(other) => p.add(
                "contestants",
                format!("expected an array, got {}", describe(other)),
            ),
        }
        let judge = match get("judge") {
            None => {
                p.add(
                    "judge",
                    "required: {identity, model} of the agent that judges",
                );
                None
            }
            Some(v) => p.agent(v, "judge"),
        };

        let oracle = match get("oracle") {
            None => None,
            Some(_) if qa => {
                p.add("oracle", "a qa battle has no patch for an oracle to test");
                None
            }
            Some(Value::Object(o)) => {
                p.unknown_keys(o, "oracle", &["repro", "suite", "timeout", "network"]);
                let repro = p.os_text(o.get("repro"), "oracle.repro");
                let suite = p.os_text(o.get("suite"), "oracle.suite");
                let given = |k: &str| o.get(k).is_some_and(|v| !v.is_null());
                if !given("repro") && !given("suite") {
                    p.add("oracle", "needs `repro`, `suite` or both");
                }
                let timeout =
                    p.duration(o.get("timeout"), "oracle.timeout", DEFAULT_ORACLE_TIMEOUT);
                let network = match o.get("network").filter(|v| !v.is_null()) {
                    None => NetworkPolicy::Deny,
                    Some(Value::String(s)) => s.parse().unwrap_or_else(|e: Error| {
                        p.add("oracle.network", e.message());
                        NetworkPolicy::Deny
                    }),
                    Some(other) => {
                        p.add(
                            "oracle.network",
                            format!(
                                "expected a string (\"deny\", \"allow\" or \"loopback:PORT\"), got {}",
                                describe(other)
                            ),
                        );
                        NetworkPolicy::Deny
                    }
                };
                Some(OracleSpec {
                    repro,
                    suite,
                    timeout,
                    network,
                })
            }
            Some(other) => {
                p.add(
                    "oracle",
                    format!(
                        "expected an object {{repro?, suite?, timeout?, network?}}, got {}",
                        describe(other)
                    ),
                );
                None
            }
        };
        let contestant_timeout = p.duration(
            get("contestant_timeout"),
            "contestant_timeout",
            DEFAULT_CONTESTANT_TIMEOUT,
        );
        let keep_worktrees = match get("keep_worktrees") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                p.add(
                    "keep_worktrees",
                    format!("expected a boolean, got {}", describe(other)),
                );
                false
            }
        };

        p.into_result()?;
        match (battle_type, prompt, judge) {
            (Some(battle_type), Some(prompt), Some(judge)) => Ok(BattleSpec {
                battle_type,
                prompt,
                project,
                base,
                contestants,
                judge,
                oracle,
                contestant_timeout,
                keep_worktrees,
            }),
            // Every missing part added a problem above.
            _ => Err(Error::internal("battle spec decoded without its parts")),
        }
    }

    /// Decodes a battle spec from JSON text (a syntax error is an
    /// `invalid_input` naming its line and column).
    pub fn from_json_str(text: &str) -> Result<BattleSpec, Error> {
        BattleSpec::from_json(&crate::json::parse_str(text)?)
    }

    /// The canonical JSON form: every field, defaults filled in, durations
    /// in seconds; a contestant's `instruction` only when it has one (so a
    /// spec without any reads as before). [`BattleSpec::from_json`] reads it
    /// back as `self`.
    pub fn to_json(&self) -> Value {
        let qa = self.battle_type == BattleType::Qa;
        let agent = |a: &AgentRef| json!({"identity": a.identity, "model": a.model});
        let contestant = |c: &ContestantSpec| {
            let mut value = agent(&c.agent);
            if let Some(instruction) = &c.instruction {
                value["instruction"] = json!(instruction);
            }
            value
        };
        json!({
            "battle_type": self.battle_type.as_str(),
            "prompt": self.prompt,
            "project": self.project,
            "base": if qa { Value::Null } else { json!(self.base.as_str()) },
            "contestants": self.contestants.iter().map(contestant).collect::<Vec<_>>(),
            "judge": agent(&self.judge),
            "oracle": self.oracle.as_ref().map(|o| json!({
                "repro": o.repro,
                "suite": o.suite,
                "timeout": o.timeout.as_secs_f64(),
                "network": o.network.name(),
            })),
            "contestant_timeout": self.contestant_timeout.as_secs_f64(),
            "keep_worktrees": self.keep_worktrees,
        })
    }

    /// Checks that every contestant's and the judge's identity is one of
    /// `identities` (the configured agents); every unknown one is a problem
    /// with its path, all in one `invalid_input` error as
    /// [`BattleSpec::from_json`] reports them.
    pub fn validate_against<S: AsRef<str>>(&self, identities: &[S]) -> Result<(), Error> {
        let known = |id: &str| identities.iter().any(|k| k.as_ref() == id);
        let mut listed: Vec<&str> = identities.iter().map(AsRef::as_ref).collect();
        listed.sort_unstable();
        let listed = if listed.is_empty() {
            "none is configured".to_owned()
        } else {
            format!("known: {}", listed.join(", "))
        };
        let mut p = Problems::default();
        let agents = self
            .contestants
            .iter()
            .enumerate()
            .map(|(i, c)| (format!("contestants[{i}].identity"), &c.agent))
            .chain([("judge.identity".to_owned(), &self.judge)]);
        for (at, agent) in agents {
            if !known(&agent.identity) {
                p.add(
                    at,
                    format!("unknown identity {:?}; {listed}", agent.identity),
                );
            }
        }
        p.into_result()
    }
}
