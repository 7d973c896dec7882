//! Names in one place: the table of every list of names that crosses a
//! face (`LISTS`), what `coderig.names()` (Python) and `names()` (Node)
//! return and what the faces' type stubs and TypeScript unions are checked
//! against.
//!
//! The table imports every capability, so nothing in the crate imports this
//! module: the capabilities take the macro that names their enums
//! (`named_enum!`: `ALL`, `NAMES`, `as_str`, `Display`, `FromStr`, serde) and
//! its [`ParseNameError`] from the small room beneath it, `names::macros`,
//! which imports nothing of the crate.

pub(crate) mod macros;

pub use macros::ParseNameError;

// The four rooms being reworked as this split lands (arena lanes, agent
// config, store records, tasks) still import the macro from here; their
// imports move to `names::macros` once that work is in, and this line goes.
pub(crate) use macros::named_enum;

/// Every list of names that crosses a face, keyed by what it names, in the
/// core's declaration order: what `coderig.names()` (Python) and `names()`
/// (Node) return, and what the faces' type stubs and TypeScript unions are
/// checked against.
pub const LISTS: &[(&str, &[&str])] = &[
    ("tier", crate::Tier::NAMES),
    ("match_kind", crate::MatchKind::NAMES),
    ("violation_kind", crate::ViolationKind::NAMES),
    ("trigger_rule", crate::flow::TriggerRule::NAMES),
    ("step_kind", crate::flow::StepKind::NAMES),
    ("skip_reason", crate::flow::SkipReason::NAMES),
    ("step_status", crate::flow::StepStatus::NAMES),
    ("resume_action", crate::flow::ResumeAction::NAMES),
    ("failure_kind", crate::flow::FailureKind::NAMES),
    ("step_outcome", crate::flow::StepOutcome::NAMES),
    ("flow_error", crate::flow::FlowError::NAMES),
    ("task_state", crate::task::TaskState::NAMES),
    ("battle_type", crate::arena::BattleType::NAMES),
    ("lane", crate::arena::Lane::NAMES),
    ("contestant_status", crate::arena::ContestantStatus::NAMES),
    ("contestant_action", crate::arena::ContestantAction::NAMES),
    ("evidence_tier", crate::arena::EvidenceTier::NAMES),
    ("winner_source", crate::arena::WinnerSource::NAMES),
    ("verdict", crate::arena::Verdict::NAMES),
    ("stream_format", crate::agent::parse::StreamFormat::NAMES),
    ("cli_preset", crate::agent::CliPreset::NAMES),
    ("access", crate::agent::Access::NAMES),
    ("sandbox_mode", crate::sandbox::SandboxMode::NAMES),
    ("sandbox_enforcer", crate::sandbox::Enforcer::NAMES),
    ("agent_kind", crate::agent::config::AgentKind::NAMES),
    ("agent_error_kind", crate::agent::AgentErrorKind::NAMES),
    ("agent_event_type", crate::agent::AgentEvent::TYPE_NAMES),
    ("error_class", crate::model::ErrorClass::NAMES),
    ("error_kind", crate::ErrorKind::NAMES),
    ("error_code", crate::ErrorKind::CODES),
];

