//! The spec: `Case`, `Step` and `Flow`, each holding the core's value.

use super::{callable_arg, py_condition, repr};
use crate::helpers::{decode, object, to_json, Items};
use coderig::flow::{Case, Flow, Step, TriggerRule};
use coderig::json;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

/// One branch of a switch step: `Case(label, steps, condition=None)`.
/// `condition(ctx)` decides whether the case matches; a case without a
/// condition never matches.
#[pyclass(module = "coderig.flow", name = "Case", frozen)]
pub struct PyCase {
    pub(super) inner: Case,
    pub(super) condition: Option<Py<PyAny>>,
}

#[pymethods]
impl PyCase {
    #[new]
    #[pyo3(signature = (label, steps, condition = None))]
    fn new(
        label: &Bound<'_, PyAny>,
        steps: &Bound<'_, PyAny>,
        condition: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let condition = callable_arg(condition, "condition")?;
        let fields = object(&[("label", Some(label)), ("steps", Some(steps))])?;
        let mut inner: Case = decode(fields, json::decode_object)?;
        inner.condition = condition.as_ref().map(py_condition);
        Ok(PyCase {
            inner,
            condition: condition.map(Bound::unbind),
        })
    }

    /// The case's label (reported as the switch's choice).
    #[getter]
    fn label(&self) -> &str {
        &self.inner.label
    }

    /// Every step of the branch.
    #[getter]
    fn steps(&self) -> Vec<String> {
        self.inner.steps.clone()
    }

    /// The callable, or None.
    #[getter]
    fn condition(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.condition.as_ref().map(|c| c.clone_ref(py))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Case({}, {}, condition={})",
            repr(py, &self.inner.label)?,
            repr(py, &self.inner.steps)?,
            repr(py, self.condition(py))?
        ))
    }
}

/// One node of a flow. Every argument but `id` has the core's default; see
/// `flow.pyi` for the signature.
#[pyclass(module = "coderig.flow", name = "Step", frozen)]
pub struct PyStep {
    pub(super) inner: Step,
    pub(super) cases: Vec<Py<PyCase>>,
    pub(super) loop_condition: Option<Py<PyAny>>,
    pub(super) when: Option<Py<PyAny>>,
}

impl PyStep {
    /// A handle on a core step without conditions (decoded from JSON).
    fn from_core(py: Python<'_>, inner: Step) -> PyResult<Py<PyStep>> {
        let cases = inner
            .cases
            .iter()
            .map(|case| {
                let inner = case.clone();
                Py::new(
                    py,
                    PyCase {
                        inner,
                        condition: None,
                    },
                )
            })
            .collect::<PyResult<_>>()?;
        Py::new(
            py,
            PyStep {
                inner,
                cases,
                loop_condition: None,
                when: None,
            },
        )
    }
}

#[pymethods]
impl PyStep {
    #[new]
    #[pyo3(
        signature = (
            id, kind = None, deps = None, trigger_rule = None, batch = None, max_retries = None,
            cases = None, default_branch = None, loop_body = None, loop_condition = None,
            loop_max_iterations = None, *, timeout = None, when = None
        ),
        text_signature = "(id, kind='code', deps=None, trigger_rule='all_success', batch=None, \
            max_retries=0, cases=None, default_branch=None, loop_body=None, loop_condition=None, \
            loop_max_iterations=100, *, timeout=None, when=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        kind: Option<&Bound<'_, PyAny>>,
        deps: Option<&Bound<'_, PyAny>>,
        trigger_rule: Option<&Bound<'_, PyAny>>,
        batch: Option<&Bound<'_, PyAny>>,
        max_retries: Option<&Bound<'_, PyAny>>,
        cases: Option<Items<Bound<'_, PyCase>>>,
        default_branch: Option<&Bound<'_, PyAny>>,
        loop_body: Option<&Bound<'_, PyAny>>,
        loop_condition: Option<Bound<'_, PyAny>>,
        loop_max_iterations: Option<&Bound<'_, PyAny>>,
        timeout: Option<&Bound<'_, PyAny>>,
        when: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let loop_condition = callable_arg(loop_condition, "loop_condition")?;
        let when = callable_arg(when, "when")?;
        let code = "code".into_bound_py_any(py)?;
        let mut inner = decode(
            object(&[
                ("id", Some(id)),
                ("kind", Some(kind.unwrap_or(&code))),
                ("deps", deps),
                ("trigger_rule", trigger_rule),
                ("batch", batch),
                ("max_retries", max_retries),
                ("timeout", timeout),
                ("default_branch", default_branch),
                ("loop_body", loop_body),
                ("loop_max_iterations", loop_max_iterations),
            ])?,
            json::step,
        )?;
        let cases = cases.map(|c| c.0).unwrap_or_default();
        inner.cases = cases.iter().map(|c| c.get().inner.clone()).collect();
        inner.loop_condition = loop_condition.as_ref().map(py_condition);
        inner.when = when.as_ref().map(py_condition);
        Ok(PyStep {
            inner,
            cases: cases.into_iter().map(Bound::unbind).collect(),
            loop_condition: loop_condition.map(Bound::unbind),
            when: when.map(Bound::unbind),
        })
    }

    /// The step's id.
    #[getter]
    fn id(&self) -> &str {
        &self.inner.id
    }

    /// `"agent"`, `"code"`, `"approval"`, `"switch"` or `"do_while"`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.inner.kind.as_str()
    }

    /// Ids of the steps this one waits for.
    #[getter]
    fn deps(&self) -> Vec<String> {
        self.inner.deps.clone()
    }

    /// The trigger rule's name.
    #[getter]
    fn trigger_rule(&self) -> &'static str {
        self.inner.trigger_rule.as_str()
    }

    /// The batch group, or None.
    #[getter]
    fn batch(&self) -> Option<&str> {
        self.inner.batch.as_deref()
    }

    /// Retries allowed after the first attempt.
    #[getter]
    fn max_retries(&self) -> u32 {
        self.inner.max_retries
    }

    /// Seconds per attempt, or None.
    #[getter]
    fn timeout(&self) -> Option<u64> {
        self.inner.timeout
    }

    /// The switch's cases (the `Case` objects given).
    #[getter]
    fn cases(&self, py: Python<'_>) -> Vec<Py<PyCase>> {
        self.cases.iter().map(|c| c.clone_ref(py)).collect()
    }

    /// The switch's default branch.
    #[getter]
    fn default_branch(&self) -> Vec<String> {
        self.inner.default_branch.clone()
    }

    /// The do-while's body.
    #[getter]
    fn loop_body(&self) -> Vec<String> {
        self.inner.loop_body.clone()
    }

    /// The do-while's condition callable, or None.
    #[getter]
    fn loop_condition(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.loop_condition.as_ref().map(|c| c.clone_ref(py))
    }

    /// The do-while's iteration cap.
    #[getter]
    fn loop_max_iterations(&self) -> u32 {
        self.inner.loop_max_iterations
    }

    /// The launch guard callable, or None.
    #[getter]
    fn when(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.when.as_ref().map(|c| c.clone_ref(py))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let s = &self.inner;
        let mut out = format!(
            "Step({}, kind={}",
            repr(py, &s.id)?,
            repr(py, s.kind.as_str())?
        );
        if !s.deps.is_empty() {
            out.push_str(&format!(", deps={}", repr(py, &s.deps)?));
        }
        if s.trigger_rule != TriggerRule::AllSuccess {
            out.push_str(&format!(
                ", trigger_rule={}",
                repr(py, s.trigger_rule.as_str())?
            ));
        }
        if let Some(b) = &s.batch {
            out.push_str(&format!(", batch={}", repr(py, b)?));
        }
        if s.max_retries != 0 {
            out.push_str(&format!(", max_retries={}", s.max_retries));
        }
        if !s.cases.is_empty() {
            let labels: Vec<&str> = s.cases.iter().map(|c| c.label.as_str()).collect();
            out.push_str(&format!(", cases=<{}>", labels.join(", ")));
        }
        if !s.default_branch.is_empty() {
            out.push_str(&format!(
                ", default_branch={}",
                repr(py, &s.default_branch)?
            ));
        }
        if !s.loop_body.is_empty() {
            out.push_str(&format!(", loop_body={}", repr(py, &s.loop_body)?));
        }
        out.push(')');
        Ok(out)
    }
}

/// A flow: `Flow(steps, batch_max_concurrent=None, batch_join_rule="all_success")`
/// or `Flow.from_spec(spec)`. Not validated on construction (see
/// `validate`); `Scheduler` validates.
#[pyclass(module = "coderig.flow", name = "Flow", frozen)]
pub struct PyFlow {
    pub(super) inner: Flow,
    pub(super) steps: Vec<Py<PyStep>>,
}

#[pymethods]
impl PyFlow {
    #[new]
    #[pyo3(
        signature = (steps, batch_max_concurrent = None, batch_join_rule = None),
        text_signature = "(steps, batch_max_concurrent=None, batch_join_rule='all_success')"
    )]
    fn new(
        steps: Items<Bound<'_, PyStep>>,
        batch_max_concurrent: Option<&Bound<'_, PyAny>>,
        batch_join_rule: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let config = object(&[
            ("max_concurrent", batch_max_concurrent),
            ("join_rule", batch_join_rule),
        ])?;
        let spec = serde_json::json!({"steps": [], "batch_config": config});
        let config = decode(spec, json::flow)?.flow.batch_config;
        let inner = Flow::new(steps.0.iter().map(|s| s.get().inner.clone()).collect())
            .with_batch_config(config);
        Ok(PyFlow {
            inner,
            steps: steps.0.into_iter().map(Bound::unbind).collect(),
        })
    }

    /// A flow from its JSON form `{"steps": [...], "batch_config"?}`,
    /// decoded strictly by the core as the server decodes one (the same
    /// message for the same mistake). Conditions have no JSON form: fields
    /// holding them are set aside, so such a case never matches, such a
    /// do-while runs once and such a `when` excludes nothing.
    #[staticmethod]
    fn from_spec(py: Python<'_>, spec: &Bound<'_, PyAny>) -> PyResult<Self> {
        let inner = decode(to_json(spec, "")?, json::flow)?.flow;
        let steps = inner
            .steps
            .iter()
            .map(|s| PyStep::from_core(py, s.clone()))
            .collect::<PyResult<_>>()?;
        Ok(PyFlow { inner, steps })
    }

    /// The steps, in flow order.
    #[getter]
    fn steps(&self, py: Python<'_>) -> Vec<Py<PyStep>> {
        self.steps.iter().map(|s| s.clone_ref(py)).collect()
    }

    /// Cap on running steps per batch group (None: unbounded).
    #[getter]
    fn batch_max_concurrent(&self) -> Option<usize> {
        self.inner.batch_config.max_concurrent
    }

    /// The rule judging a batch group as a whole.
    #[getter]
    fn batch_join_rule(&self) -> &'static str {
        self.inner.batch_config.join_rule.as_str()
    }

    /// The first step with this id, or None.
    fn step(&self, py: Python<'_>, id: &str) -> Option<Py<PyStep>> {
        self.steps
            .iter()
            .find(|s| s.get().inner.id == id)
            .map(|s| s.clone_ref(py))
    }

    fn __len__(&self) -> usize {
        self.steps.len()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let ids: Vec<&str> = self.inner.steps.iter().map(|s| s.id.as_str()).collect();
        Ok(format!(
            "Flow(<{} steps: {}>, batch_max_concurrent={}, batch_join_rule={})",
            ids.len(),
            ids.join(", "),
            repr(py, self.inner.batch_config.max_concurrent)?,
            repr(py, self.inner.batch_config.join_rule.as_str())?
        ))
    }
}
