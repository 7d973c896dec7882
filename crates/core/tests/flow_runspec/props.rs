//! Properties: every generated spec decodes, and its JSON and YAML forms agree.

use super::*;

fn id() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_-]{0,8}"
}

fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z {}.\"]{0,12}[a-z]"
}

fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        (1u64..100_000).prop_map(Duration::from_secs),
        (1u64..10_000_000).prop_map(Duration::from_millis),
    ]
}

/// A command step's `sandbox:` (or null), every field optional: a mode, a
/// network (ports in any order, repeated, zero-padded: the canonical form
/// names them sorted), absolute paths, limits.
fn sandbox_json() -> impl Strategy<Value = Value> {
    let network = prop_oneof![
        Just("allow".to_owned()),
        Just("deny".to_owned()),
        proptest::collection::vec((1u16..=u16::MAX, 0usize..2), 1..4).prop_map(|ports| {
            let list: Vec<String> = ports
                .into_iter()
                .map(|(p, zeros)| format!("{}{p}", "0".repeat(zeros)))
                .collect();
            format!("loopback:{}", list.join(","))
        }),
    ];
    let paths = || proptest::collection::vec("/[a-z]{1,6}(/[a-z.]{1,6}){0,2}", 0..3);
    let limit = || proptest::option::of(1u64..=(1 << 53) - 1);
    proptest::option::of(
        (
            proptest::option::of(proptest::sample::select(vec!["enforce", "auto", "off"])),
            proptest::option::of(network),
            paths(),
            paths(),
            (limit(), limit(), limit(), limit(), limit()),
        )
            .prop_map(|(mode, network, writable, readable, (nofile, nproc, fsize, aspace, tmp))| {
                json!({"mode": mode, "network": network, "writable": writable, "readable": readable,
                       "limits": {"open_files": nofile, "processes": nproc, "file_size": fsize, "address_space": aspace, "tmp_size": tmp}})
            }),
    )
    .prop_map(|s| s.unwrap_or(Value::Null))
}

fn step_json() -> impl Strategy<Value = Value> {
    let kind = prop_oneof![
        (text(), proptest::option::of(text()), prop_oneof![Just("read_only"), Just("edit"), Just("full")], proptest::option::of(text()))
            .prop_map(|(prompt, model, access, workdir)| json!({"kind": "agent", "agent": "claude", "prompt": prompt, "model": model, "access": access, "workdir": workdir})),
        (proptest::collection::vec(text(), 1..4), proptest::option::of(text()), proptest::collection::btree_map("[A-Z]{1,4}", text(), 0..3), sandbox_json())
            .prop_map(|(argv, cwd, env, sandbox)| json!({"kind": "command", "argv": argv, "cwd": cwd, "env": env, "sandbox": sandbox})),
        (text(), sandbox_json()).prop_map(|(sh, sandbox)| json!({"kind": "command", "shell": sh, "sandbox": sandbox})),
        Just(json!({"kind": "code"})),
        proptest::option::of(text()).prop_map(|m| json!({"kind": "approval", "message": m})),
        (proptest::collection::vec((id(), text(), proptest::collection::vec(id(), 0..3)), 0..3), proptest::collection::vec(id(), 0..3))
            .prop_map(|(cases, default)| json!({"kind": "switch", "default": default,
                "cases": cases.into_iter().map(|(l, c, s)| json!({"label": l, "condition": c, "steps": s})).collect::<Vec<_>>()})),
        (proptest::collection::vec(id(), 1..3), text(), 1u32..=10_000)
            .prop_map(|(body, c, n)| json!({"kind": "do_while", "body": body, "condition": c, "max_iterations": n})),
    ];
    let retry = proptest::option::of((1u32..=100, duration(), 1.0f64..8.0, proptest::sample::subsequence(vec!["failure", "timeout"], 1..=2)).prop_map(
        |(n, initial, m, on)| json!({"max_attempts": n, "initial": initial.as_secs_f64(), "multiplier": m, "max": "1000000s", "on": on}),
    ));
    (
        kind,
        id(),
        proptest::collection::vec(id(), 0..3),
        proptest::sample::select(TriggerRule::NAMES),
        proptest::option::of(id()),
        proptest::option::of(duration()),
        retry,
        proptest::option::of(text()),
    )
        .prop_map(|(mut step, id, deps, rule, batch, timeout, retry, when)| {
            let o = step.as_object_mut().unwrap();
            o.insert("id".into(), json!(id));
            o.insert("deps".into(), json!(deps));
            o.insert("trigger_rule".into(), json!(rule));
            o.insert("batch".into(), json!(batch));
            o.insert(
                "timeout".into(),
                json!(timeout.map(|t| format!("{}ms", t.as_millis()))),
            );
            o.insert("retry".into(), retry.unwrap_or(Value::Null));
            o.insert("when".into(), json!(when));
            step
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn to_json_round_trips(
        steps in proptest::collection::vec(step_json(), 1..6),
        name in proptest::option::of("[a-z.-]{1,10}"),
        report in proptest::option::of(text()),
        cap in proptest::option::of(0usize..10),
    ) {
        let value = json!({"name": name, "steps": steps, "report": report,
                           "batch_config": {"max_concurrent": cap, "join_rule": "one_success"}});
        let spec = FlowSpec::from_json(&value).unwrap();
        let canonical = spec.to_json();
        prop_assert_eq!(&FlowSpec::from_json(&canonical).unwrap(), &spec);
        // Canonical means stable: a second trip gives the same JSON.
        prop_assert_eq!(FlowSpec::from_json(&canonical).unwrap().to_json(), canonical.clone());
        // And the YAML text of it decodes to the same spec.
        let yaml = serde_json::to_string_pretty(&canonical).unwrap();
        prop_assert_eq!(&FlowSpec::from_yaml_str(&yaml).unwrap(), &spec);
        // compile never panics, whatever the generated conditions say.
        let _ = spec.compile();
    }

    #[test]
    fn parse_never_panics(text in "\\PC{0,200}") {
        if let Ok(spec) = FlowSpec::parse(&text) {
            let _ = spec.compile();
        }
    }

    #[test]
    fn parse_never_panics_on_spec_like_text(
        text in "(steps|id|kind|agent|prompt|cases|\\{\\{|\\}\\}|\\[|\\]|:|-| |\n|\"|'|code|do_while|body|condition|x|1){0,60}"
    ) {
        if let Ok(spec) = FlowSpec::parse(&text) {
            let _ = spec.compile();
        }
    }
}
