//! The runtime flow spec: decoding, compiling, CEL and templates.

use coderig::flow::FlowSpec;

#[test]
fn design_example_decodes() {
    let yaml = r#"
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
    let spec = FlowSpec::from_yaml_str(yaml).unwrap();
    assert_eq!(spec.steps.len(), 5);
    let back = FlowSpec::from_json(&spec.to_json()).unwrap();
    assert_eq!(back, spec);
    let e = FlowSpec::parse("{\"steps\": [{\"id\": \"a b\", \"kind\": \"agent\", \"shell\": 1}]}")
        .unwrap_err();
    println!("{}", e.message());
}
