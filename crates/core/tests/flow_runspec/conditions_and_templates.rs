//! CEL conditions (when, switch choice, loop continue) and minijinja templates over the run context.

use super::*;

fn ctx() -> Value {
    json!({
        "input": {"issue": "x", "n": 5, "big": 18446744073709551615u64, "ratio": 0.5, "tags": ["a", "b"], "none": null},
        "results": {"tests": "12 passed", "angle-web": "web result", "count": 3},
        "steps": {"tests": {"status": "done", "attempt": 1, "exit_code": 0}, "plan": {"status": "failed", "attempt": 2, "error": "boom"}},
        "iteration": 2
    })
}

fn condition_flow(expr: &str) -> coderig::flow::CompiledFlow {
    FlowSpec::from_json(&steps(json!([{"id": "s", "kind": "code", "when": expr}])))
        .unwrap()
        .compile()
        .unwrap()
}

#[test]
fn cel_evaluates_over_the_run_context() {
    let table: &[(&str, Result<bool, &str>)] = &[
        ("results[\"tests\"].contains(\"passed\")", Ok(true)),
        ("results[\"tests\"].contains(\"failed\")", Ok(false)),
        ("input.issue == \"x\"", Ok(true)),
        ("input.issue == \"y\"", Ok(false)),
        ("iteration < 3", Ok(true)),
        ("iteration < 2", Ok(false)),
        ("steps[\"tests\"].status == \"done\"", Ok(true)),
        ("steps.tests.exit_code == 0", Ok(true)),
        ("steps[\"plan\"].error == \"boom\"", Ok(true)),
        ("size(results) > 0", Ok(true)),
        ("size(results) == 3", Ok(true)),
        ("has(results.tests)", Ok(true)),
        ("has(results.ghost)", Ok(false)),
        ("results[\"angle-web\"] == \"web result\"", Ok(true)),
        ("input.n + results.count == 8", Ok(true)),
        ("input.big == 18446744073709551615u", Ok(true)),
        ("input.ratio < 1.0", Ok(true)),
        ("\"b\" in input.tags", Ok(true)),
        ("input.none == null", Ok(true)),
        (
            "results.tests",
            Err("evaluated to a string, expected a bool"),
        ),
        ("iteration", Err("evaluated to an int, expected a bool")),
        ("results.ghost == 1", Err("evaluation failed")),
        ("undeclared_var", Err("evaluation failed")),
    ];
    for (expr, want) in table {
        let flow = condition_flow(expr);
        match (flow.when("s", &ctx()), want) {
            (Ok(got), Ok(want)) => assert_eq!(got, *want, "{expr}"),
            (Err(e), Err(want)) => {
                assert_eq!(e.kind(), ErrorKind::InvalidInput, "{expr}");
                assert_eq!(e.details()["path"], "steps[0].when", "{expr}");
                assert!(e.message().contains(want), "{expr}: {}", e.message());
            }
            (got, want) => panic!("{expr}: got {got:?}, want {want:?}"),
        }
    }
    // Before any step finished: the context's parts default to empty.
    assert!(!condition_flow("size(results) > 0")
        .when("s", &json!({}))
        .unwrap());
    assert!(condition_flow("iteration == 0")
        .when("s", &json!({}))
        .unwrap());
}

#[test]
fn when_switch_choice_and_loop_continues() {
    let flow = FlowSpec::from_json(&steps(json!([
        {"id": "a", "kind": "code"},
        {"id": "g", "kind": "code", "when": "input.go"},
        {"id": "sw", "kind": "switch", "cases": [
            {"label": "red", "condition": "has(results.a) && results.a == \"red\"", "steps": ["r"]},
            {"label": "any", "condition": "size(results) > 0", "steps": ["y"]},
        ], "default": ["d"]},
        {"id": "r", "kind": "code"}, {"id": "y", "kind": "code"}, {"id": "d", "kind": "code"},
        {"id": "bad", "kind": "switch", "cases": [{"label": "x", "condition": "results.a", "steps": []}]},
        {"id": "lp", "kind": "do_while", "body": ["a"], "condition": "iteration < 3 && !results.a.contains(\"green\")"},
    ])))
    .unwrap()
    .compile()
    .unwrap();
    assert!(flow.when("a", &json!({})).unwrap(), "no when: true");
    assert!(flow.when("g", &json!({"input": {"go": true}})).unwrap());
    assert!(!flow.when("g", &json!({"input": {"go": false}})).unwrap());
    assert_eq!(
        flow.when("zz", &json!({})).unwrap_err().kind(),
        ErrorKind::NotFoundId
    );

    let table = [
        (json!({"results": {"a": "red"}}), Some("red")),
        (json!({"results": {"a": "blue"}}), Some("any")),
        (json!({"results": {}}), None),
    ];
    for (c, want) in table {
        assert_eq!(
            flow.switch_choice("sw", &c).unwrap().as_deref(),
            want,
            "{c}"
        );
    }
    let e = flow
        .switch_choice("bad", &json!({"results": {"a": "s"}}))
        .unwrap_err();
    assert_eq!(e.details()["path"], "steps[6].cases[0].condition");
    assert!(e.message().contains("expected a bool"));
    assert_eq!(
        flow.switch_choice("a", &json!({})).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );

    for (c, want) in [
        (json!({"iteration": 1, "results": {"a": "red"}}), true),
        (json!({"iteration": 3, "results": {"a": "red"}}), false),
        (json!({"iteration": 1, "results": {"a": "green"}}), false),
    ] {
        assert_eq!(flow.loop_continues("lp", &c).unwrap(), want, "{c}");
    }
    assert_eq!(
        flow.loop_continues("a", &json!({})).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
}

#[test]
fn templates_render_over_the_run_context() {
    let render_prompt = |prompt: &str, c: &Value| -> Result<String, coderig::Error> {
        let flow = FlowSpec::from_json(&steps(
            json!([{"id": "p", "kind": "agent", "agent": "x", "prompt": prompt}]),
        ))
        .unwrap()
        .compile()
        .unwrap();
        match flow.render_action("p", c)? {
            RenderedAction::Agent { prompt, .. } => Ok(prompt),
            other => panic!("{other:?}"),
        }
    };
    let table: &[(&str, Result<&str, &str>)] = &[
        ("{{ results[\"angle-web\"] }}", Ok("web result")),
        ("Fix {{ input.issue }}!", Ok("Fix x!")),
        ("{{ results.tests }}", Ok("12 passed")),
        (
            "{% if results[\"x\"] is defined %}yes{% else %}no{% endif %}",
            Ok("no"),
        ),
        (
            "{% if results[\"tests\"] is defined %}yes{% endif %}",
            Ok("yes"),
        ),
        ("{{ iteration + 1 }} {{ steps.tests.status }}", Ok("3 done")),
        ("<b>{{ \"<&>\" }}</b>", Ok("<b><&></b>")),
        ("{{ input.tags | join(\",\") }}", Ok("a,b")),
        ("{{ results.missing }}", Err("undefined")),
        ("{{ inptu.issue }}", Err("undefined")),
    ];
    for (prompt, want) in table {
        match (render_prompt(prompt, &ctx()), want) {
            (Ok(got), Ok(want)) => assert_eq!(got, *want, "{prompt}"),
            (Err(e), Err(want)) => {
                assert_eq!(e.kind(), ErrorKind::InvalidInput, "{prompt}");
                assert_eq!(e.details()["path"], "steps[0].prompt");
                assert_eq!(e.details()["step"], "p");
                assert_eq!(e.details()["field"], "prompt");
                assert!(e.message().contains("step \"p\""), "{}", e.message());
                assert!(e.message().contains(want), "{prompt}: {}", e.message());
            }
            (got, want) => panic!("{prompt}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn render_action_renders_every_template_of_a_step() {
    let flow = FlowSpec::from_json(&json!({
        "steps": [
            {"id": "run-it", "kind": "command", "argv": ["echo", "{{ input.issue }}", "-n"], "cwd": "/w/{{ input.issue }}",
             "env": {"A": "{{ iteration }}", "B": "plain"}},
            {"id": "sh", "kind": "command", "shell": "echo {{ results[\"angle-web\"] }}"},
            {"id": "ok", "kind": "approval", "message": "Ship {{ input.issue }}?"},
            {"id": "quiet", "kind": "approval"},
            {"id": "ag", "kind": "agent", "agent": "claude", "model": "m", "prompt": "go", "access": "full", "workdir": "{{ input.issue }}/sub"},
            {"id": "c", "kind": "code"},
            {"id": "miss", "kind": "command", "shell": "ok", "env": {"Z": "{{ nope }}"}},
        ],
        "report": "plan: {{ results.tests }}"
    }))
    .unwrap()
    .compile()
    .unwrap();
    let c = ctx();
    assert_eq!(
        flow.render_action("run-it", &c).unwrap(),
        RenderedAction::Command {
            program: CommandProgram::Argv(vec!["echo".into(), "x".into(), "-n".into()]),
            cwd: Some("/w/x".into()),
            env: [
                ("A".to_owned(), "2".to_owned()),
                ("B".to_owned(), "plain".to_owned())
            ]
            .into(),
        }
    );
    assert_eq!(
        flow.render_action("sh", &c).unwrap(),
        RenderedAction::Command {
            program: CommandProgram::Shell("echo web result".into()),
            cwd: None,
            env: Default::default()
        }
    );
    assert_eq!(
        flow.render_action("ok", &c).unwrap(),
        RenderedAction::Approval {
            message: Some("Ship x?".into())
        }
    );
    assert_eq!(
        flow.render_action("quiet", &c).unwrap(),
        RenderedAction::Approval { message: None }
    );
    assert_eq!(
        flow.render_action("ag", &c).unwrap(),
        RenderedAction::Agent {
            agent: "claude".into(),
            model: Some("m".into()),
            prompt: "go".into(),
            access: Access::Full,
            workdir: Some("x/sub".into())
        }
    );
    assert_eq!(flow.render_action("c", &c).unwrap(), RenderedAction::Code);
    let e = flow.render_action("miss", &c).unwrap_err();
    assert_eq!(e.details()["path"], "steps[6].env.Z");
    assert_eq!(e.details()["field"], "env.Z");
    assert_eq!(
        flow.render_action("zz", &c).unwrap_err().kind(),
        ErrorKind::NotFoundId
    );
    assert_eq!(
        flow.render_report(&c).unwrap().as_deref(),
        Some("plan: 12 passed")
    );
    let e = flow.render_report(&json!({"results": {}})).unwrap_err();
    assert_eq!(e.details()["path"], "report");
    let none = FlowSpec::from_json(&steps(json!([{"id": "a", "kind": "code"}])))
        .unwrap()
        .compile()
        .unwrap();
    assert_eq!(none.render_report(&c).unwrap(), None);
    // A compiled flow is cheap to clone and shared across threads.
    let shared = flow.clone();
    let t = std::thread::spawn(move || shared.render_report(&ctx()).unwrap());
    assert_eq!(t.join().unwrap().as_deref(), Some("plan: 12 passed"));
}
