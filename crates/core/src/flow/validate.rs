//! Flow spec validation: every problem at once, as typed errors.

use super::spec::{Flow, StepKind};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

/// One problem in a flow spec. Serializes as `{"code": "...", ...fields}`
/// so the server can return the list as JSON unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum ValidationError {
    /// A step has an empty id.
    #[error("step #{index} has an empty id")]
    EmptyId {
        /// Position of the step in the flow.
        index: usize,
    },
    /// Two steps share an id.
    #[error("duplicate step id {id:?}")]
    DuplicateId {
        /// The repeated id.
        id: String,
    },
    /// A dependency names no step.
    #[error("step {step:?} depends on unknown step {dep:?}")]
    UnknownDependency {
        /// The depending step.
        step: String,
        /// The unknown id.
        dep: String,
    },
    /// The dependencies form a cycle (a step depending on itself included).
    #[error("dependency cycle: {}", steps.join(" -> "))]
    Cycle {
        /// The cycle as a path whose last element repeats the first.
        steps: Vec<String>,
    },
    /// A switch case names an unknown step.
    #[error("switch {step:?} case {case:?} names unknown step {target:?}")]
    UnknownCaseStep {
        /// The switch step.
        step: String,
        /// The case label.
        case: String,
        /// The unknown id.
        target: String,
    },
    /// A switch's default branch names an unknown step.
    #[error("switch {step:?} default branch names unknown step {target:?}")]
    UnknownDefaultBranchStep {
        /// The switch step.
        step: String,
        /// The unknown id.
        target: String,
    },
    /// Two cases of one switch share a label.
    #[error("switch {step:?} has two cases labelled {label:?}")]
    DuplicateCaseLabel {
        /// The switch step.
        step: String,
        /// The repeated label.
        label: String,
    },
    /// A do-while's loop body names an unknown step.
    #[error("do_while {step:?} loop body names unknown step {target:?}")]
    UnknownLoopBodyStep {
        /// The do-while step.
        step: String,
        /// The unknown id.
        target: String,
    },
    /// A step that is not a switch has cases or a default branch.
    #[error("step {step:?} has cases or a default branch but is not a switch")]
    CasesOnNonSwitch {
        /// The step.
        step: String,
    },
    /// A step that is not a do-while has a loop body or condition.
    #[error("step {step:?} has a loop body or condition but is not a do_while")]
    LoopOnNonDoWhile {
        /// The step.
        step: String,
    },
    /// A batch cap of 0 would never let a batched step run.
    #[error("batch max_concurrent is 0, so no batched step could ever run")]
    ZeroBatchCap,
}

impl ValidationError {
    /// The stable snake_case code (the `code` field of the JSON form).
    pub fn code(&self) -> &'static str {
        match self {
            ValidationError::EmptyId { .. } => "empty_id",
            ValidationError::DuplicateId { .. } => "duplicate_id",
            ValidationError::UnknownDependency { .. } => "unknown_dependency",
            ValidationError::Cycle { .. } => "cycle",
            ValidationError::UnknownCaseStep { .. } => "unknown_case_step",
            ValidationError::UnknownDefaultBranchStep { .. } => "unknown_default_branch_step",
            ValidationError::DuplicateCaseLabel { .. } => "duplicate_case_label",
            ValidationError::UnknownLoopBodyStep { .. } => "unknown_loop_body_step",
            ValidationError::CasesOnNonSwitch { .. } => "cases_on_non_switch",
            ValidationError::LoopOnNonDoWhile { .. } => "loop_on_non_do_while",
            ValidationError::ZeroBatchCap => "zero_batch_cap",
        }
    }
}

/// Every problem of `flow`, in a stable order (per step in flow order, then
/// cycles); empty means the flow is valid. Runs in O(steps + edges).
pub fn validate(flow: &Flow) -> Vec<ValidationError> {
    let mut errors = Vec::new();
    // Each id's FIRST step, as `Flow::step` and the pure decisions resolve ids.
    let mut ids: HashMap<&str, usize> = HashMap::with_capacity(flow.steps.len());
    for (i, s) in flow.steps.iter().enumerate() {
        if s.id.is_empty() {
            errors.push(ValidationError::EmptyId { index: i });
        } else if let Entry::Vacant(first) = ids.entry(s.id.as_str()) {
            first.insert(i);
        } else {
            errors.push(ValidationError::DuplicateId { id: s.id.clone() });
        }
    }
    let known = |id: &str| ids.contains_key(id);
    if flow.batch_config.max_concurrent == Some(0) && flow.steps.iter().any(|s| s.batch.is_some()) {
        errors.push(ValidationError::ZeroBatchCap);
    }
    for s in &flow.steps {
        for (k, d) in s.deps.iter().enumerate() {
            if !known(d) && !s.deps[..k].contains(d) {
                errors.push(ValidationError::UnknownDependency {
                    step: s.id.clone(),
                    dep: d.clone(),
                });
            }
        }
        if s.kind != StepKind::Switch && (!s.cases.is_empty() || !s.default_branch.is_empty()) {
            errors.push(ValidationError::CasesOnNonSwitch { step: s.id.clone() });
        }
        if s.kind != StepKind::DoWhile && (!s.loop_body.is_empty() || s.loop_condition.is_some()) {
            errors.push(ValidationError::LoopOnNonDoWhile { step: s.id.clone() });
        }
        let mut labels = HashSet::new();
        for c in &s.cases {
            if !labels.insert(c.label.as_str()) {
                errors.push(ValidationError::DuplicateCaseLabel {
                    step: s.id.clone(),
                    label: c.label.clone(),
                });
            }
            for t in c.steps.iter().filter(|t| !known(t)) {
                errors.push(ValidationError::UnknownCaseStep {
                    step: s.id.clone(),
                    case: c.label.clone(),
                    target: t.clone(),
                });
            }
        }
        for t in s.default_branch.iter().filter(|t| !known(t)) {
            errors.push(ValidationError::UnknownDefaultBranchStep {
                step: s.id.clone(),
                target: t.clone(),
            });
        }
        for t in s.loop_body.iter().filter(|t| !known(t)) {
            errors.push(ValidationError::UnknownLoopBodyStep {
                step: s.id.clone(),
                target: t.clone(),
            });
        }
    }
    errors.extend(find_cycles(flow, &ids));
    errors
}

/// [`ValidationError::Cycle`]s as concrete paths: at least one whenever the
/// dependencies are cyclic, and no cycle twice. Interlocked cycles may be
/// reported as one (fix it and validate again); this keeps the walk O(n).
fn find_cycles(flow: &Flow, ids: &HashMap<&str, usize>) -> Vec<ValidationError> {
    let n = flow.steps.len();
    // Edges dep -> dependent over first occurrences of ids, unknown deps ignored.
    let mut deps: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut indegree = vec![0usize; n];
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, s) in flow.steps.iter().enumerate() {
        if ids.get(s.id.as_str()) != Some(&i) {
            continue;
        }
        deps[i] = s
            .deps
            .iter()
            .filter_map(|d| ids.get(d.as_str()).copied())
            .collect();
        deps[i].sort_unstable();
        deps[i].dedup();
        for &j in &deps[i] {
            dependents[j].push(i);
        }
        indegree[i] = deps[i].len();
    }
    let mut queue: Vec<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
    let mut removed = vec![false; n];
    while let Some(i) = queue.pop() {
        removed[i] = true;
        for &d in &dependents[i] {
            indegree[d] -= 1;
            if indegree[d] == 0 {
                queue.push(d);
            }
        }
    }
    // Every leftover step has a leftover dependency, so walking dependencies
    // from any leftover step must revisit a step: that walk holds a cycle.
    let mut errors = Vec::new();
    let mut reported = vec![false; n];
    for start in 0..n {
        if removed[start] || reported[start] {
            continue;
        }
        let mut pos_in_path: HashMap<usize, usize> = HashMap::new();
        let mut path = Vec::new();
        let mut cur = start;
        loop {
            if let Some(&p) = pos_in_path.get(&cur) {
                let mut cycle: Vec<usize> = path[p..].to_vec();
                cycle.reverse(); // report in dependency order: a -> b means b depends on a
                if cycle.iter().any(|&c| reported[c]) {
                    break;
                }
                cycle.iter().for_each(|&c| reported[c] = true);
                let mut steps: Vec<String> =
                    cycle.iter().map(|&c| flow.steps[c].id.clone()).collect();
                steps.push(steps[0].clone());
                errors.push(ValidationError::Cycle { steps });
                break;
            }
            if reported[cur] {
                break;
            }
            pos_in_path.insert(cur, path.len());
            path.push(cur);
            cur = *deps[cur]
                .iter()
                .find(|&&d| !removed[d])
                .expect("a step left by Kahn's algorithm has a dependency left too");
        }
        path.iter().for_each(|&c| reported[c] = true);
    }
    errors
}

/// Each problem as `{"code", "message", ...fields}`, in the given order:
/// the form of the pure `flow::validate` problems in the bindings and in the
/// details of an invalid flow. (`/api/flows/validate` validates the runtime
/// `FlowSpec` and lists `{path, message}` problems instead.)
pub fn validation_errors_json(errors: &[ValidationError]) -> Vec<Value> {
    errors
        .iter()
        .map(|e| {
            let mut value = serde_json::to_value(e).unwrap_or_else(|_| json!({}));
            if let Value::Object(fields) = &mut value {
                fields.insert("code".into(), json!(e.code()));
                fields.insert("message".into(), json!(e.to_string()));
            }
            value
        })
        .collect()
}
