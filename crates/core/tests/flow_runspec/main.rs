//! The runtime flow spec (feature `flows`): strict decoding with every
//! problem's path, compile problems, CEL conditions and minijinja templates
//! over the run context, and the canonical JSON round trip.

use coderig::agent::Access;
use coderig::flow::{
    AgentAction, ApprovalAction, CaseSpec, CommandAction, CommandProgram, FlowSpec, RenderedAction,
    RetryOn, StepAction, StepKind, SwitchAction, TriggerRule,
};
use coderig::ErrorKind;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::time::Duration;

const DESIGN_YAML: &str = r#"
name: fix-until-green
steps:
  - id: plan
    kind: agent
    agent: claude
    model: sonnet
    prompt: "Plan a fix for: {{ input.issue }}"
  - id: tests
    kind: command
    deps: [plan]
    shell: "python3 -m pytest -q"
    timeout: 5m
    retry: {max_attempts: 3, initial: 1s, multiplier: 2, on: [timeout]}
  - id: route
    kind: switch
    deps: [tests]
    cases: [{label: green, condition: 'results["tests"].contains("passed")', steps: [ship]}]
    default: [review]
  - {id: ship, kind: approval, deps: [route], message: "Ship it?"}
  - {id: review, kind: agent, deps: [route], agent: claude, model: sonnet, prompt: "{{ results.tests }}"}
report: "{{ results.plan }}"
"#;

fn design_json() -> Value {
    json!({
        "name": "fix-until-green",
        "steps": [
            {"id": "plan", "kind": "agent", "agent": "claude", "model": "sonnet",
             "prompt": "Plan a fix for: {{ input.issue }}"},
            {"id": "tests", "kind": "command", "deps": ["plan"], "shell": "python3 -m pytest -q",
             "timeout": "5m", "retry": {"max_attempts": 3, "initial": "1s", "multiplier": 2, "on": ["timeout"]}},
            {"id": "route", "kind": "switch", "deps": ["tests"],
             "cases": [{"label": "green", "condition": "results[\"tests\"].contains(\"passed\")", "steps": ["ship"]}],
             "default": ["review"]},
            {"id": "ship", "kind": "approval", "deps": ["route"], "message": "Ship it?"},
            {"id": "review", "kind": "agent", "deps": ["route"], "agent": "claude", "model": "sonnet",
             "prompt": "{{ results.tests }}"}
        ],
        "report": "{{ results.plan }}"
    })
}

/// The `(path, message)` problems of an `invalid_input` error.
fn problems(e: &coderig::Error) -> Vec<(String, String)> {
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    e.details()["problems"]
        .as_array()
        .unwrap_or_else(|| panic!("no problems in {:?}", e.details()))
        .iter()
        .map(|p| {
            (
                p["path"].as_str().unwrap().to_owned(),
                p["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Asserts the problems are exactly `expected` (path, message substring), in order.
fn assert_problems(e: &coderig::Error, expected: &[(&str, &str)]) {
    let got = problems(e);
    assert_eq!(
        got.len(),
        expected.len(),
        "expected {expected:?}\n     got {got:?}"
    );
    for ((path, message), (want_path, want)) in got.iter().zip(expected) {
        assert_eq!(path, want_path, "got {got:?}");
        assert!(
            message.contains(want),
            "at {path}: {message:?} lacks {want:?}"
        );
    }
    assert_eq!(e.details()["path"], expected[0].0);
}

fn steps(list: Value) -> Value {
    json!({ "steps": list })
}

#[test]
fn the_design_example_decodes_alike_from_yaml_and_json() {
    let from_yaml = FlowSpec::from_yaml_str(DESIGN_YAML).unwrap();
    let from_json = FlowSpec::from_json(&design_json()).unwrap();
    assert_eq!(from_yaml, from_json);
    assert_eq!(FlowSpec::parse(DESIGN_YAML).unwrap(), from_json);
    assert_eq!(
        FlowSpec::parse(&design_json().to_string()).unwrap(),
        from_json
    );

    let spec = from_yaml;
    assert_eq!(spec.name.as_deref(), Some("fix-until-green"));
    assert_eq!(spec.report.as_deref(), Some("{{ results.plan }}"));
    assert_eq!(spec.steps.len(), 5);
    let plan = &spec.steps[0];
    assert_eq!(
        plan.action,
        StepAction::Agent(AgentAction {
            agent: "claude".into(),
            model: Some("sonnet".into()),
            prompt: "Plan a fix for: {{ input.issue }}".into(),
            access: Access::ReadOnly,
            workdir: None,
        })
    );
    assert_eq!(plan.retry.max_attempts, 1);
    let tests = &spec.steps[1];
    assert_eq!(tests.deps, ["plan"]);
    assert_eq!(tests.timeout, Some(Duration::from_secs(300)));
    assert_eq!(tests.retry.max_attempts, 3);
    assert_eq!(tests.retry.initial, Duration::from_secs(1));
    assert_eq!(tests.retry.multiplier, 2.0);
    assert_eq!(tests.retry.max, Duration::from_secs(300));
    assert_eq!(tests.retry.on, [RetryOn::Timeout]);
    assert_eq!(
        tests.action,
        StepAction::Command(CommandAction {
            program: CommandProgram::Shell("python3 -m pytest -q".into()),
            cwd: None,
            env: Default::default(),
            sandbox: Default::default(),
        })
    );
    assert_eq!(
        spec.steps[2].action,
        StepAction::Switch(SwitchAction {
            cases: vec![CaseSpec {
                label: "green".into(),
                condition: "results[\"tests\"].contains(\"passed\")".into(),
                steps: vec!["ship".into()],
            }],
            default: vec!["review".into()],
        })
    );
    assert_eq!(
        spec.steps[3].action,
        StepAction::Approval(ApprovalAction {
            message: Some("Ship it?".into())
        })
    );
    let kinds: Vec<&str> = spec.steps.iter().map(|s| s.action.kind()).collect();
    assert_eq!(kinds, ["agent", "command", "switch", "approval", "agent"]);
    assert_eq!(FlowSpec::from_json(&spec.to_json()).unwrap(), spec);
}

#[test]
fn decode_problems_name_every_path() {
    // (what, spec, the exact problems as (path, message substring)).
    type Case = (&'static str, Value, Vec<(&'static str, &'static str)>);
    let cases: Vec<Case> = vec![
        ("not an object", json!([1]), vec![(".", "a flow spec must be an object, got an array")]),
        ("no steps", json!({}), vec![("steps", "required")]),
        ("empty steps", steps(json!([])), vec![("steps", "0 steps: a flow has 1 to 20000")]),
        (
            "unknown top-level key and bad name",
            json!({"name": "a b", "stpes": [], "steps": [{"id": "a", "kind": "code"}]}),
            vec![
                ("stpes", "unknown field `stpes`, expected one of `name`, `description`"),
                ("name", "is no flow name"),
            ],
        ),
        (
            "a key of another kind names its kind",
            steps(json!([{"id": "a", "kind": "code"}, {"id": "b", "kind": "agent", "agent": "x", "prompt": "p", "shell": "ls"}])),
            vec![("steps[1].shell", "only a command step has `shell`")],
        ),
        (
            "an unknown step key names the expected ones",
            steps(json!([{"id": "a", "kind": "approval", "mesage": "x"}])),
            vec![("steps[0].mesage", "unknown field `mesage`, expected one of `id`, `kind`, `deps`, `trigger_rule`, `batch`, `timeout`, `retry`, `when`, `message`")],
        ),
        (
            "kind missing, id bad, deps wrong type",
            steps(json!([{"id": "a b", "deps": "x"}])),
            vec![
                ("steps[0].kind", "required: one of `agent`"),
                ("steps[0].id", "\"a b\" is no step id"),
                ("steps[0].deps", "expected an array of strings, got a string"),
            ],
        ),
        (
            "unknown kind, blank id",
            steps(json!([{"id": " ", "kind": "shell"}])),
            vec![("steps[0].kind", "unknown step kind \"shell\""), ("steps[0].id", "must not be blank")],
        ),
        (
            "agent requirements and bad access",
            steps(json!([{"id": "a", "kind": "agent", "access": "root", "model": 3}])),
            vec![
                ("steps[0].agent", "required"),
                ("steps[0].model", "expected a string, got a number"),
                ("steps[0].prompt", "required"),
                ("steps[0].access", "unknown access level \"root\""),
            ],
        ),
        (
            "retry problems",
            steps(json!([{"id": "a", "kind": "code", "retry": {"max_attempts": 0, "initial": "5m", "max": "1m", "multiplier": 0.5, "on": ["failure", "failure", "crash"], "jitter": 1}}])),
            vec![
                ("steps[0].retry.jitter", "unknown field `jitter`"),
                ("steps[0].retry.max_attempts", "must be an integer from 1 to 100, got 0"),
                ("steps[0].retry.max", "shorter than the first one"),
                ("steps[0].retry.multiplier", "at least 1, got 0.5"),
                ("steps[0].retry.on[1]", "`failure` is listed twice"),
                ("steps[0].retry.on[2]", "unknown retry ending \"crash\""),
            ],
        ),
        (
            "durations",
            steps(json!([{"id": "a", "kind": "code", "timeout": "soon"}, {"id": "b", "kind": "code", "timeout": 0}, {"id": "c", "kind": "code", "timeout": true}])),
            vec![
                ("steps[0].timeout", "bad duration \"soon\""),
                ("steps[1].timeout", "must be more than zero"),
                ("steps[2].timeout", "expected a number of seconds or a duration string"),
            ],
        ),
        (
            "command: both argv and shell; neither; bad env",
            steps(json!([
                {"id": "a", "kind": "command", "argv": ["ls"], "shell": "ls"},
                {"id": "b", "kind": "command", "env": {"A=B": "x", "C": 1}},
                {"id": "c", "kind": "command", "argv": []},
                {"id": "d", "kind": "command", "argv": ["", 2]}
            ])),
            vec![
                ("steps[0].shell", "give `argv` or `shell`, not both"),
                ("steps[1]", "needs `argv` (a list) or `shell`"),
                ("steps[1].env.A=B", "has no `=`"),
                ("steps[1].env.C", "expected a string, got a number"),
                ("steps[2].argv", "must not be empty"),
                ("steps[3].argv[0]", "must not be blank"),
                ("steps[3].argv[1]", "expected a string, got a number"),
            ],
        ),
        (
            "sandbox: unknown network mode, unknown keys, relative paths, bad limits and mode",
            steps(json!([
                {"id": "a", "kind": "command", "shell": "ls", "sandbox": {"network": "sometimes"}},
                {"id": "b", "kind": "command", "shell": "ls", "sandbox": {"writeable": ["/tmp"], "limits": {"cpu": 1}}},
                {"id": "c", "kind": "command", "shell": "ls", "sandbox": {"writable": ["/tmp", "build/out"], "readable": [".ssh", 3]}},
                {"id": "d", "kind": "command", "shell": "ls", "sandbox": {"mode": "strict", "network": "loopback:0", "limits": {"open_files": 0, "processes": -1, "file_size": 9007199254740992_u64, "address_space": "1G"}}},
                {"id": "e", "kind": "command", "shell": "ls", "sandbox": {"network": "loopback:8080,", "writable": "/tmp"}},
                {"id": "f", "kind": "command", "shell": "ls", "sandbox": "deny"},
                {"id": "g", "kind": "code", "sandbox": {"network": "allow"}},
            ])),
            vec![
                ("steps[0].sandbox.network", "unknown network policy `sometimes`: use allow, deny, or loopback:PORT"),
                ("steps[1].sandbox.writeable", "unknown field `writeable`, expected one of `mode`, `network`, `writable`, `readable`, `limits`"),
                ("steps[1].sandbox.limits.cpu", "unknown field `cpu`, expected one of `open_files`, `processes`, `file_size`, `address_space`, `tmp_size`"),
                ("steps[2].sandbox.writable[1]", "\"build/out\" is a relative path: give an absolute one"),
                ("steps[2].sandbox.readable[0]", "\".ssh\" is a relative path"),
                ("steps[2].sandbox.readable[1]", "expected an absolute path, got a number"),
                ("steps[3].sandbox.mode", "unknown sandbox mode `strict`: use enforce, auto or off"),
                ("steps[3].sandbox.network", "unknown network policy `loopback:0`"),
                ("steps[3].sandbox.limits.open_files", "must be an integer from 1 to 9007199254740991, got 0"),
                ("steps[3].sandbox.limits.processes", "must be an integer from 1 to 9007199254740991, got -1"),
                ("steps[3].sandbox.limits.file_size", "must be an integer from 1 to 9007199254740991, got 9007199254740992"),
                ("steps[3].sandbox.limits.address_space", "expected an integer, got a string"),
                ("steps[4].sandbox.network", "unknown network policy `loopback:8080,`"),
                ("steps[4].sandbox.writable", "expected an array of absolute paths, got a string"),
                ("steps[5].sandbox", "expected an object {mode, network, writable, readable, limits}, got a string"),
                ("steps[6].sandbox", "only a command step has `sandbox`"),
            ],
        ),
        (
            "switch and do_while shapes",
            steps(json!([
                {"id": "s", "kind": "switch", "cases": [{"label": "x", "steps": ["a"], "when": "true"}, 3], "default": "a"},
                {"id": "l", "kind": "do_while", "body": [], "max_iterations": 0},
            ])),
            vec![
                ("steps[0].cases[0].when", "unknown field `when`, expected one of `label`, `condition`, `steps`"),
                ("steps[0].cases[0].condition", "required"),
                ("steps[0].cases[1]", "expected an object {label, condition, steps}, got a number"),
                ("steps[0].default", "expected an array of strings, got a string"),
                ("steps[1].body", "must not be empty"),
                ("steps[1].condition", "required"),
                ("steps[1].max_iterations", "must be an integer from 1 to 10000, got 0"),
            ],
        ),
        (
            "trigger rule and batch config",
            json!({"steps": [{"id": "a", "kind": "code", "trigger_rule": "sometimes", "batch": ""}],
                   "batch_config": {"max_concurrent": -1, "join_rule": "x", "size": 2}}),
            vec![
                ("batch_config.size", "unknown field `size`"),
                ("batch_config.max_concurrent", "must be an integer from 0"),
                ("batch_config.join_rule", "unknown trigger rule \"x\""),
                ("steps[0].trigger_rule", "unknown trigger rule \"sometimes\""),
                ("steps[0].batch", "must not be blank"),
            ],
        ),
    ];
    for (what, value, expected) in cases {
        let e = FlowSpec::from_json(&value).expect_err(what);
        assert_problems(&e, &expected);
        // One message joining them all, each with its path.
        for (path, _) in &expected {
            if *path != "." {
                assert!(
                    e.message().contains(&format!("`{path}`")),
                    "{what}: {}",
                    e.message()
                );
            }
        }
    }
}

#[test]
fn defaults_and_forms_accepted() {
    let spec = FlowSpec::from_json(&steps(json!([
        {"id": "a-1", "kind": "command", "argv": ["echo", "", "{{ input.x }}"], "cwd": "/tmp", "env": {"K": ""}, "timeout": 1.5},
        {"id": "b_2", "kind": "do_while", "body": ["a-1"], "condition": "iteration < 3", "trigger_rule": "ALL_DONE", "timeout": "500ms"},
        {"id": "c", "kind": "agent", "agent": "x", "prompt": "p", "access": "edit", "retry": {"max_attempts": 2.0, "initial": 0}},
        {"id": "d", "kind": "code", "when": null, "batch": "g"},
    ])))
    .unwrap();
    assert_eq!(spec.steps[0].timeout, Some(Duration::from_millis(1500)));
    assert_eq!(spec.steps[1].timeout, Some(Duration::from_millis(500)));
    assert_eq!(spec.steps[1].trigger_rule, TriggerRule::AllDone);
    let StepAction::DoWhile(d) = &spec.steps[1].action else {
        panic!()
    };
    assert_eq!(d.max_iterations, 100);
    let StepAction::Agent(a) = &spec.steps[2].action else {
        panic!()
    };
    assert_eq!(a.access, Access::Edit);
    assert_eq!(spec.steps[2].retry.max_attempts, 2);
    assert_eq!(spec.steps[2].retry.initial, Duration::ZERO);
    assert_eq!(spec.steps[2].retry.on, [RetryOn::Failure, RetryOn::Timeout]);
    assert_eq!(spec.steps[3].batch.as_deref(), Some("g"));
    assert_eq!(spec.batch_config.max_concurrent, None);
    assert_eq!(FlowSpec::from_json(&spec.to_json()).unwrap(), spec);
}

/// What reaches the operating system — a command's cwd, argv, shell and
/// sandbox paths, an agent's workdir — cannot hold a NUL character: each
/// one is an `invalid_input` problem at its path when the spec is decoded
/// (so `POST /api/runs` answers 400, not a failed spawn or a 500 later).
#[test]
fn a_nul_in_a_path_or_a_command_is_a_decode_problem() {
    const NUL: &str = "contains a NUL character";
    let e = FlowSpec::from_json(&steps(json!([
        {"id": "a", "kind": "command", "argv": ["ls", "a\u{0}b"], "cwd": "/tmp/a\u{0}b"},
        {"id": "b", "kind": "command", "shell": "echo \u{0}",
         "sandbox": {"writable": ["/tmp/\u{0}"], "readable": ["/ok", "/\u{0}x"]}},
        {"id": "c", "kind": "agent", "agent": "x", "model": "m", "prompt": "p\u{0}", "workdir": "w\u{0}"},
        {"id": "d", "kind": "command", "argv": ["l\u{0}s"]},
    ])))
    .unwrap_err();
    assert_problems(
        &e,
        &[
            ("steps[0].argv[1]", NUL),
            ("steps[0].cwd", NUL),
            ("steps[1].shell", NUL),
            ("steps[1].sandbox.writable[0]", NUL),
            ("steps[1].sandbox.readable[1]", NUL),
            ("steps[2].workdir", NUL),
            ("steps[3].argv[0]", NUL),
        ],
    );
}

#[test]
fn a_command_steps_sandbox_decodes_every_field() {
    use coderig::sandbox::{NetworkPolicy, ResourceLimits, SandboxMode, SandboxOverrides};
    let spec = FlowSpec::parse(
        r#"
steps:
  - id: fetch
    kind: command
    shell: git fetch
    sandbox:
      mode: auto
      network: "loopback: 9000,+80, 0443,9000"
      writable: [/srv/cache, /tmp/x]
      readable: [/root/.ssh]
      limits: {open_files: 256, processes: 64, file_size: 1048576, address_space: 4294967296.0, tmp_size: 8388608}
  - {id: plain, kind: command, argv: [ls], sandbox: {network: allow}}
  - {id: empty, kind: command, argv: [ls], sandbox: {}}
  - {id: nulls, kind: command, argv: [ls], sandbox: {mode: null, network: null, writable: null, limits: null}}
  - {id: none, kind: command, argv: [ls], sandbox: null}
"#,
    )
    .unwrap();
    let sandbox = |i: usize| match &spec.steps[i].action {
        StepAction::Command(c) => c.sandbox.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        sandbox(0),
        SandboxOverrides {
            mode: Some(SandboxMode::Auto),
            network: Some(NetworkPolicy::Ports(vec![80, 443, 9000])),
            writable: vec!["/srv/cache".into(), "/tmp/x".into()],
            readable: vec!["/root/.ssh".into()],
            limits: ResourceLimits {
                open_files: Some(256),
                processes: Some(64),
                file_size: Some(1 << 20),
                address_space: Some(1 << 32),
                tmp_size: Some(8 << 20),
            },
        }
    );
    assert_eq!(sandbox(1).network, Some(NetworkPolicy::Allow));
    for i in 2..5 {
        assert_eq!(sandbox(i), SandboxOverrides::default(), "step {i}");
    }
    // The canonical form: the network by its name, ports sorted; nothing
    // for a sandbox that states nothing.
    let canonical = spec.to_json();
    assert_eq!(
        canonical["steps"][0]["sandbox"],
        json!({"mode": "auto", "network": "loopback:80,443,9000", "writable": ["/srv/cache", "/tmp/x"],
               "readable": ["/root/.ssh"],
               "limits": {"open_files": 256, "processes": 64, "file_size": 1048576, "address_space": 4294967296u64, "tmp_size": 8388608}})
    );
    assert_eq!(
        canonical["steps"][1]["sandbox"],
        json!({"network": "allow"})
    );
    for i in 2..5 {
        assert!(canonical["steps"][i].get("sandbox").is_none(), "step {i}");
    }
    assert_eq!(FlowSpec::from_json(&canonical).unwrap(), spec);
    spec.compile().unwrap();
}

#[test]
fn text_forms_report_syntax_errors_with_line_and_column() {
    let e = FlowSpec::from_yaml_str("steps:\n  - id: a\n   kind: [code\n").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(
        e.message().starts_with("the flow spec is not valid YAML"),
        "{}",
        e.message()
    );
    assert!(e.details()["line"].as_u64().is_some(), "{:?}", e.details());
    let e = FlowSpec::parse("{\"steps\": [").unwrap_err();
    assert!(
        e.message().starts_with("the flow spec is not valid JSON"),
        "{}",
        e.message()
    );
    assert_eq!(e.details()["line"], 1);
    // YAML 1.2: `on` and `yes` are strings, not booleans.
    let spec = FlowSpec::parse(
        "steps:\n- {id: a, kind: code, retry: {on: [failure]}}\n- {id: yes, kind: code}\n",
    )
    .unwrap();
    assert_eq!(spec.steps[1].id, "yes");
    // A YAML scalar where a spec belongs.
    let e = FlowSpec::parse("just text").unwrap_err();
    assert_problems(&e, &[(".", "a flow spec must be an object, got a string")]);
}

#[test]
fn load_reads_json_and_yaml_files_and_reports_io() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = dir.path().join("f.yaml");
    std::fs::write(&yaml, DESIGN_YAML).unwrap();
    let json_path = dir.path().join("f.json");
    std::fs::write(&json_path, design_json().to_string()).unwrap();
    assert_eq!(
        FlowSpec::load(&yaml).unwrap(),
        FlowSpec::load(&json_path).unwrap()
    );
    let e = FlowSpec::load(&dir.path().join("missing.yml")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    let txt = dir.path().join("f.txt");
    std::fs::write(&txt, "steps: []").unwrap();
    assert_eq!(
        FlowSpec::load(&txt).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    let bad = dir.path().join("bad.yml");
    std::fs::write(&bad, "steps: [{id: a}]").unwrap();
    let e = FlowSpec::load(&bad).unwrap_err();
    assert_problems(&e, &[("steps[0].kind", "required")]);
    assert!(e.message().contains("bad.yml"), "{}", e.message());
}

#[test]
fn compile_builds_the_scheduler_flow() {
    let compiled = FlowSpec::from_yaml_str(DESIGN_YAML)
        .unwrap()
        .compile()
        .unwrap();
    let flow = compiled.flow();
    let kinds: Vec<StepKind> = flow.steps.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        [
            StepKind::Agent,
            StepKind::Code,
            StepKind::Switch,
            StepKind::Approval,
            StepKind::Agent
        ]
    );
    let tests = flow.step("tests").unwrap();
    assert_eq!(tests.timeout, Some(300));
    assert_eq!(tests.max_retries, 2);
    assert_eq!(tests.deps, ["plan"]);
    let route = flow.step("route").unwrap();
    assert_eq!(route.cases.len(), 1);
    assert_eq!(route.cases[0].label, "green");
    assert_eq!(route.cases[0].steps, ["ship"]);
    assert_eq!(route.default_branch, ["review"]);
    let cond = route.cases[0].condition.as_ref().unwrap();
    assert!(cond.eval(&json!({"results": {"tests": "3 passed"}})));
    assert!(!cond.eval(&json!({"results": {"tests": "1 failed"}})));
    // An evaluation error counts as false in the scheduler's closure.
    assert!(!cond.eval(&json!({"results": {"tests": 3}})));
    assert!(coderig::flow::validate(flow).is_empty());
    assert_eq!(compiled.step("ship").unwrap().action.kind(), "approval");
    assert!(compiled.step("nope").is_none());
    assert_eq!(compiled.spec().steps.len(), 5);

    let looped = FlowSpec::from_json(&steps(json!([
        {"id": "fix", "kind": "agent", "agent": "a", "prompt": "fix"},
        {"id": "loop", "kind": "do_while", "body": ["fix"], "condition": "iteration < 3", "max_iterations": 7,
         "timeout": 0.2, "batch": "b", "when": "input.go", "trigger_rule": "always"},
    ])))
    .unwrap()
    .compile()
    .unwrap();
    let l = looped.flow().step("loop").unwrap();
    assert_eq!(l.loop_body, ["fix"]);
    assert_eq!(l.loop_max_iterations, 7);
    assert_eq!(l.timeout, Some(1), "fractions round up");
    assert_eq!(l.batch.as_deref(), Some("b"));
    assert_eq!(l.trigger_rule, TriggerRule::Always);
    assert!(l
        .loop_condition
        .as_ref()
        .unwrap()
        .eval(&json!({"iteration": 2})));
    assert!(!l
        .loop_condition
        .as_ref()
        .unwrap()
        .eval(&json!({"iteration": 3})));
    assert!(l
        .when
        .as_ref()
        .unwrap()
        .eval(&json!({"input": {"go": true}})));
}

#[test]
fn compile_reports_every_problem_in_one_error() {
    let spec = FlowSpec::from_json(&steps(json!([
        {"id": "a", "kind": "agent", "agent": "x", "prompt": "{{ input.issue "},
        {"id": "b", "kind": "code", "deps": ["a", "ghost"], "when": "input.x =="},
        {"id": "a", "kind": "code"},
        {"id": "c", "kind": "code", "deps": ["d"]},
        {"id": "d", "kind": "code", "deps": ["c"]},
        {"id": "s", "kind": "switch", "cases": [{"label": "l", "condition": "true", "steps": ["zz"]}, {"label": "l", "condition": "1 +", "steps": []}], "default": ["yy"]},
        {"id": "w", "kind": "do_while", "body": ["w", "b", "xx"], "condition": "true"},
        {"id": "w2", "kind": "do_while", "body": ["b"], "condition": "true"},
        {"id": "cmd", "kind": "command", "argv": ["echo", "{% if %}"], "env": {"K": "{{ }}"}},
    ])))
    .unwrap();
    let e = spec.compile().unwrap_err();
    assert_problems(
        &e,
        &[
            ("steps[0].prompt", "bad template: syntax error"),
            ("steps[1].when", "bad CEL expression"),
            ("steps[5].cases[1].condition", "bad CEL expression"),
            ("steps[8].argv[1]", "bad template"),
            ("steps[8].env.K", "bad template"),
            ("steps[2].id", "duplicate step id \"a\" (steps[0] has it)"),
            ("steps[1].deps[1]", "unknown step \"ghost\""),
            ("steps[5].cases[0].steps[0]", "unknown step \"zz\""),
            ("steps[5].cases[1].label", "two cases are labelled \"l\""),
            ("steps[5].default[0]", "unknown step \"yy\""),
            ("steps[6].body[2]", "unknown step \"xx\""),
            ("steps", "dependency cycle: "),
            ("steps[6].body[0]", "cannot be in its own body"),
            ("steps[7].body[0]", "already in the body of do_while \"w\""),
        ],
    );
    let cycle = &problems(&e)[11].1;
    assert!(
        cycle.contains("c -> d -> c") || cycle.contains("d -> c -> d"),
        "{cycle}"
    );

    let zero = FlowSpec::from_json(&json!({"steps": [{"id": "a", "kind": "code", "batch": "g"}], "batch_config": {"max_concurrent": 0}}))
        .unwrap()
        .compile()
        .unwrap_err();
    assert_problems(
        &zero,
        &[(
            "batch_config.max_concurrent",
            "no batched step could ever run",
        )],
    );

    let report = FlowSpec::from_json(
        &json!({"steps": [{"id": "a", "kind": "code"}], "report": "{% for %}"}),
    )
    .unwrap()
    .compile()
    .unwrap_err();
    assert_problems(&report, &[("report", "bad template")]);
}

#[test]
fn compile_checks_a_spec_built_by_hand() {
    let mut spec = FlowSpec::from_json(&steps(json!([{"id": "a", "kind": "code"}]))).unwrap();
    spec.steps[0].id = "has space".into();
    spec.steps[0].retry.max_attempts = 0;
    let e = spec.compile().unwrap_err();
    assert_problems(
        &e,
        &[
            ("steps[0].id", "is no step id"),
            ("steps[0].retry.max_attempts", "from 1 to 100"),
        ],
    );
}

mod conditions_and_templates;
mod props;
