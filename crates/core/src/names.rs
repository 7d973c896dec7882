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

/// Every list of names that crosses a face, keyed by what it names, in the
/// core's declaration order: what `coderig.names()` (Python) and `names()`
/// (Node) return, and what the faces' type stubs and TypeScript unions are
/// checked against. Grouped by room: edits, flows (the scheduler, then the
/// runtime's runs), battles, events, agents, models, errors. The two lists
/// of runtime flow specs (`retry_on`, `run_step_kind`) need the `flows`
/// feature, which both bindings and the server have.
pub const LISTS: &[(&str, &[&str])] = &[
    ("tier", crate::Tier::NAMES),
    ("match_kind", crate::MatchKind::NAMES),
    ("violation_kind", crate::ViolationKind::NAMES),
    ("hashline_op", crate::json::HashlineOp::NAMES),
    ("trigger_rule", crate::flow::TriggerRule::NAMES),
    ("step_kind", crate::flow::StepKind::NAMES),
    ("skip_reason", crate::flow::SkipReason::NAMES),
    ("step_status", crate::flow::StepStatus::NAMES),
    ("resume_action", crate::flow::ResumeAction::NAMES),
    ("failure_kind", crate::flow::FailureKind::NAMES),
    ("step_outcome", crate::flow::StepOutcome::NAMES),
    ("flow_error", crate::flow::FlowError::NAMES),
    ("task_state", crate::task::TaskState::NAMES),
    ("run_status", crate::event::RunStatus::NAMES),
    #[cfg(feature = "flows")]
    ("run_step_kind", crate::flow::RunStepKind::NAMES),
    ("attempt_outcome", crate::flow::AttemptOutcome::NAMES),
    #[cfg(feature = "flows")]
    ("retry_on", crate::flow::RetryOn::NAMES),
    ("battle_type", crate::arena::BattleType::NAMES),
    ("battle_status", crate::event::BattleStatus::NAMES),
    ("lane", crate::arena::Lane::NAMES),
    ("contestant_status", crate::arena::ContestantStatus::NAMES),
    ("contestant_action", crate::arena::ContestantAction::NAMES),
    (
        "cross_exam_status",
        crate::arena::lifecycle::CrossExamStatus::NAMES,
    ),
    ("evidence_tier", crate::arena::EvidenceTier::NAMES),
    ("winner_source", crate::arena::WinnerSource::NAMES),
    ("verdict", crate::arena::Verdict::NAMES),
    ("event_type", crate::event::EventType::NAMES),
    ("output_kind", crate::event::OutputKind::NAMES),
    ("stream_format", crate::agent::parse::StreamFormat::NAMES),
    ("cli_preset", crate::agent::CliPreset::NAMES),
    ("access", crate::agent::Access::NAMES),
    ("sandbox_mode", crate::sandbox::SandboxMode::NAMES),
    ("sandbox_enforcer", crate::sandbox::Enforcer::NAMES),
    ("agent_kind", crate::agent::config::AgentKind::NAMES),
    ("agent_error_kind", crate::agent::AgentErrorKind::NAMES),
    ("agent_event_type", crate::agent::AgentEvent::TYPE_NAMES),
    ("native_api", crate::agent::native::Api::NAMES),
    ("native_tools", crate::agent::native::ToolsMode::NAMES),
    (
        "native_stop_reason",
        crate::agent::native::control::StopReason::NAMES,
    ),
    ("error_class", crate::model::ErrorClass::NAMES),
    ("error_evidence", crate::model::Evidence::NAMES),
    (
        "fallback_error_reason",
        crate::model::FallbackErrorReason::NAMES,
    ),
    ("error_kind", crate::ErrorKind::NAMES),
    ("error_code", crate::ErrorKind::CODES),
];

#[cfg(test)]
mod tests {
    use super::LISTS;
    use std::collections::BTreeSet;

    #[test]
    fn every_list_has_its_own_key_and_distinct_snake_case_names() {
        let keys: BTreeSet<&str> = LISTS.iter().map(|(key, _)| *key).collect();
        assert_eq!(keys.len(), LISTS.len(), "a key twice");
        for (key, names) in LISTS {
            assert!(
                key.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{key}"
            );
            assert!(!names.is_empty(), "{key} is empty");
            let distinct: BTreeSet<&str> = names.iter().copied().collect();
            assert_eq!(distinct.len(), names.len(), "{key} has a name twice");
            let upper = *key == "error_code";
            for name in *names {
                assert!(
                    name.chars().all(|c| if upper {
                        c.is_ascii_uppercase() || c == '_'
                    } else {
                        c.is_ascii_lowercase() || c == '_' || c == '-'
                    }),
                    "{key}: {name}"
                );
            }
        }
    }
}
