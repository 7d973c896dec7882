//! The strict decoder of battle specs: every problem at once, with its path.

use coderig::arena::spec::{DEFAULT_CONTESTANT_TIMEOUT, DEFAULT_ORACLE_TIMEOUT};
use coderig::arena::{
    contestant_prompt, AgentRef, Base, BattleSpec, BattleType, ContestantSpec, OracleCommands,
    OracleSpec, MAX_INSTRUCTION_CHARS,
};
use coderig::sandbox::NetworkPolicy;
use coderig::ErrorKind;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::time::Duration;

fn agent(identity: &str, model: &str) -> AgentRef {
    AgentRef {
        identity: identity.into(),
        model: model.into(),
    }
}

fn design_example() -> Value {
    json!({"battle_type": "coding", "prompt": "Fix the failing test in calc.py",
       "project": "/abs/path/to/repo", "base": "HEAD",
       "contestants": [{"identity": "claude", "model": "sonnet"}, {"identity": "qwen", "model": "qwen3-coder"}],
       "judge": {"identity": "local", "model": "qwen3"},
       "oracle": {"repro": "python3 -m pytest -q tests/test_calc.py", "suite": "python3 -m pytest -q", "timeout": "5m"},
       "contestant_timeout": "20m", "keep_worktrees": false})
}

fn minimal_qa() -> Value {
    json!({"battle_type": "qa", "prompt": "Why is the sky blue?",
           "contestants": [{"identity": "a", "model": "m"}, {"identity": "b", "model": "m"}],
           "judge": {"identity": "j", "model": "m"}})
}

/// The spec with `key` set to `value` (`null` removes nothing: null is sent).
fn with(mut spec: Value, key: &str, value: Value) -> Value {
    spec[key] = value;
    spec
}

fn without(mut spec: Value, key: &str) -> Value {
    spec.as_object_mut().unwrap().remove(key);
    spec
}

#[test]
fn the_design_example_decodes() {
    let spec = BattleSpec::from_json(&design_example()).unwrap();
    assert_eq!(
        spec,
        BattleSpec {
            battle_type: BattleType::Coding,
            prompt: "Fix the failing test in calc.py".into(),
            project: Some("/abs/path/to/repo".into()),
            base: Base::Ref("HEAD".into()),
            contestants: vec![
                agent("claude", "sonnet").into(),
                agent("qwen", "qwen3-coder").into()
            ],
            judge: agent("local", "qwen3"),
            oracle: Some(OracleSpec {
                repro: Some("python3 -m pytest -q tests/test_calc.py".into()),
                suite: Some("python3 -m pytest -q".into()),
                timeout: Duration::from_secs(300),
                network: NetworkPolicy::Deny,
            }),
            contestant_timeout: Duration::from_secs(1200),
            keep_worktrees: false,
        }
    );
    assert_eq!(
        spec.oracle.unwrap().commands(),
        OracleCommands {
            repro: true,
            suite: true
        }
    );
    let text = design_example().to_string();
    assert!(BattleSpec::from_json_str(&text).is_ok());
    assert!(coderig::json::battle(&design_example()).is_ok());
}

#[test]
fn defaults_and_null_mean_not_given() {
    let spec = BattleSpec::from_json(&minimal_qa()).unwrap();
    assert_eq!(spec.base, Base::Ref("HEAD".into()));
    assert_eq!(spec.contestant_timeout, DEFAULT_CONTESTANT_TIMEOUT);
    assert_eq!(spec.contestant_timeout, Duration::from_secs(20 * 60));
    assert!(!spec.keep_worktrees && spec.oracle.is_none() && spec.project.is_none());
    let nulls = json!({"battle_type": "qa", "prompt": "Why is the sky blue?", "project": null, "base": null,
        "contestants": [{"identity": "a", "model": "m"}, {"identity": "b", "model": "m"}],
        "judge": {"identity": "j", "model": "m"}, "oracle": null, "contestant_timeout": null,
        "keep_worktrees": null});
    assert_eq!(BattleSpec::from_json(&nulls).unwrap(), spec);

    let coding = with(design_example(), "base", json!("snapshot"));
    let coding = with(
        coding,
        "oracle",
        json!({"suite": "make test", "repro": null}),
    );
    let coding = with(coding, "contestant_timeout", json!(90));
    let spec = BattleSpec::from_json(&coding).unwrap();
    assert_eq!(spec.base, Base::Snapshot);
    let oracle = spec.oracle.unwrap();
    assert_eq!(
        (oracle.repro, oracle.timeout),
        (None, DEFAULT_ORACLE_TIMEOUT)
    );
    assert_eq!(spec.contestant_timeout, Duration::from_secs(90));
    for base in [
        "main",
        "HEAD~1",
        "v1.2",
        "3f2a9c1",
        "origin/main",
        "Snapshot",
    ] {
        let spec = BattleSpec::from_json(&with(design_example(), "base", json!(base))).unwrap();
        assert_eq!(spec.base, Base::Ref(base.into()), "{base}");
    }
    // Aliases of the battle type are the named enum's.
    let spec =
        BattleSpec::from_json(&with(design_example(), "battle_type", json!("code"))).unwrap();
    assert_eq!(spec.battle_type, BattleType::Coding);
}

/// `(path, message)` of each problem.
type Problems = Vec<(String, String)>;

/// The problems of a refused spec.
fn problems(spec: &Value) -> Problems {
    let e = BattleSpec::from_json(spec).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let list: Vec<(String, String)> = e.details()["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["path"].as_str().unwrap().to_owned(),
                p["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(e.details()["path"], list[0].0.as_str());
    let joined: Vec<String> = list.iter().map(|(p, m)| format!("`{p}`: {m}")).collect();
    assert_eq!(e.message(), joined.join("; "));
    list
}

fn one(path: &str, message: &str) -> Problems {
    vec![(path.to_owned(), message.to_owned())]
}

#[test]
fn the_oracle_network_is_deny_unless_given() {
    let network = |value: Value| {
        let spec = with(
            design_example(),
            "oracle",
            json!({"suite": "make test", "network": value}),
        );
        BattleSpec::from_json(&spec)
            .unwrap()
            .oracle
            .unwrap()
            .network
    };
    let cases: &[(Value, NetworkPolicy)] = &[
        (json!(null), NetworkPolicy::Deny),
        (json!("deny"), NetworkPolicy::Deny),
        (json!("allow"), NetworkPolicy::Allow),
        (
            json!("loopback:9000, 80"),
            NetworkPolicy::Ports(vec![80, 9000]),
        ),
    ];
    for (value, want) in cases {
        assert_eq!(&network(value.clone()), want, "{value}");
    }
    // Not given at all: deny, and the canonical form says so.
    let spec = BattleSpec::from_json(&design_example()).unwrap();
    assert_eq!(spec.oracle.as_ref().unwrap().network, NetworkPolicy::Deny);
    assert_eq!(spec.to_json()["oracle"]["network"], "deny");
}

#[test]
fn each_problem_has_its_path() {
    let pair = |i: &str, m: &str| json!({"identity": i, "model": m});
    let cases: Vec<(&str, Value, Problems)> = vec![
        ("unknown top field", with(design_example(), "extra", json!(1)),
         one("extra", "unknown field `extra`, expected one of `battle_type`, `prompt`, `project`, `base`, `contestants`, `judge`, `oracle`, `contestant_timeout`, `keep_worktrees`")),
        ("one contestant", with(design_example(), "contestants", json!([pair("a", "m")])),
         one("contestants", "1 contestant: a battle needs 2 to 6")),
        ("seven contestants", with(design_example(), "contestants", json!((0..7).map(|i| pair(&format!("a{i}"), "m")).collect::<Vec<_>>())),
         one("contestants", "7 contestants: a battle needs 2 to 6")),
        ("no contestants", with(design_example(), "contestants", json!([])),
         one("contestants", "0 contestants: a battle needs 2 to 6")),
        ("duplicate", with(design_example(), "contestants", json!([pair("a", "m"), pair("b", "m"), pair("a", "m")])),
         one("contestants[2]", "duplicate of contestants[0] (a/m)")),
        ("same folder", with(design_example(), "contestants", json!([pair("a-b", "c"), pair("a", "b-c")])),
         one("contestants[1]", "a/b-c has the results folder `a-b-c` of contestants[0]")),
        ("no folder name", with(design_example(), "contestants", json!([pair("é", "ü"), pair("a", "m")])),
         one("contestants[0]", "contestant \"é\"/\"ü\" has no ASCII letter or digit to name its folder")),
        ("contestant fields", with(design_example(), "contestants", json!([{"identity": "a"}, {"identity": 3, "model": " ", "x": 1}])),
         vec![("contestants[0].model".into(), "required".into()),
              ("contestants[1].x".into(), "unknown field `x`, expected one of `identity`, `model`, `instruction`".into()),
              ("contestants[1].identity".into(), "expected a string, got a number".into()),
              ("contestants[1].model".into(), "must not be blank".into())]),
        ("contestant not an object", with(design_example(), "contestants", json!(["a/m", pair("b", "m")])),
         one("contestants[0]", "expected an object {identity, model, instruction?}, got a string")),
        ("instruction not a string", with(design_example(), "contestants", json!([{"identity": "a", "model": "m", "instruction": ["x"]}, pair("b", "m")])),
         one("contestants[0].instruction", "expected a string, got an array")),
        ("blank instruction", with(design_example(), "contestants", json!([pair("a", "m"), {"identity": "b", "model": "m", "instruction": " \n"}])),
         one("contestants[1].instruction", "must not be blank")),
        ("over-long instruction", with(design_example(), "contestants", json!([pair("a", "m"), {"identity": "b", "model": "m", "instruction": "é".repeat(MAX_INSTRUCTION_CHARS + 1)}])),
         one("contestants[1].instruction", &format!("{} characters: an instruction has at most {MAX_INSTRUCTION_CHARS}", MAX_INSTRUCTION_CHARS + 1))),
        ("judge with an instruction", with(design_example(), "judge", json!({"identity": "j", "model": "m", "instruction": "be fair"})),
         one("judge.instruction", "unknown field `instruction`, expected one of `identity`, `model`")),
        ("contestants not an array", with(design_example(), "contestants", json!({"identity": "a"})),
         one("contestants", "expected an array, got an object")),
        ("coding without project", without(design_example(), "project"),
         one("project", "required for a coding battle: the path of its git repository")),
        ("empty prompt", with(design_example(), "prompt", json!("  \n")),
         one("prompt", "must not be blank")),
        ("no prompt", without(design_example(), "prompt"),
         one("prompt", "required: the task every contestant gets")),
        ("no judge", without(design_example(), "judge"),
         one("judge", "required: {identity, model} of the agent that judges")),
        ("judge without model", with(design_example(), "judge", json!({"identity": "j", "model": null})),
         one("judge.model", "required")),
        ("oracle with neither command", with(design_example(), "oracle", json!({"timeout": "5m"})),
         one("oracle", "needs `repro`, `suite` or both")),
        ("oracle unknown field", with(design_example(), "oracle", json!({"suite": "x", "tests": "y"})),
         one("oracle.tests", "unknown field `tests`, expected one of `repro`, `suite`, `timeout`, `network`")),
        ("oracle network", with(design_example(), "oracle", json!({"suite": "x", "network": "sometimes"})),
         one("oracle.network", "unknown network policy `sometimes`: use allow, deny, or loopback:PORT[,PORT...] (e.g. loopback:8080)")),
        ("oracle network port zero", with(design_example(), "oracle", json!({"suite": "x", "network": "loopback:0"})),
         one("oracle.network", "unknown network policy `loopback:0`: use allow, deny, or loopback:PORT[,PORT...] (e.g. loopback:8080)")),
        ("oracle network of a wrong type", with(design_example(), "oracle", json!({"suite": "x", "network": false})),
         one("oracle.network", "expected a string (\"deny\", \"allow\" or \"loopback:PORT\"), got a boolean")),
        ("oracle timeout", with(design_example(), "oracle", json!({"suite": "x", "timeout": "5 parsecs"})),
         one("oracle.timeout", "bad duration \"5 parsecs\": expected a number of seconds or a number with a unit (\"500ms\", \"90s\", \"20m\", \"2h\")")),
        ("oracle not an object", with(design_example(), "oracle", json!("pytest")),
         one("oracle", "expected an object {repro?, suite?, timeout?, network?}, got a string")),
        ("zero timeout", with(design_example(), "contestant_timeout", json!("0s")),
         one("contestant_timeout", "must be more than zero")),
        ("negative timeout", with(design_example(), "contestant_timeout", json!(-1)),
         one("contestant_timeout", "bad duration -1: expected a non-negative number of seconds")),
        ("timeout of a wrong type", with(design_example(), "contestant_timeout", json!(true)),
         one("contestant_timeout", "expected a number of seconds or a duration string (\"90s\"), got a boolean")),
        ("keep_worktrees", with(design_example(), "keep_worktrees", json!("yes")),
         one("keep_worktrees", "expected a boolean, got a string")),
        ("bad battle type", with(design_example(), "battle_type", json!("duel")),
         one("battle_type", "unknown battle type \"duel\"; expected one of: qa, coding")),
        ("no battle type", without(design_example(), "battle_type"),
         one("battle_type", "required: \"coding\" or \"qa\"")),
        ("option-like base", with(design_example(), "base", json!("--upload-pack=x")),
         one("base", "\"--upload-pack=x\": a revision must not start with `-`")),
        ("base with a space", with(design_example(), "base", json!("main branch")),
         one("base", "\"main branch\": a revision has no whitespace or control characters")),
        ("base range", with(design_example(), "base", json!("main..HEAD")),
         one("base", "\"main..HEAD\": a range is no single commit (`..`)")),
        ("blank base", with(design_example(), "base", json!("")),
         one("base", "must not be blank")),
        ("qa with base and oracle", with(with(minimal_qa(), "base", json!("HEAD")), "oracle", json!({"suite": "x"})),
         vec![("base".into(), "a qa battle has no base (only coding battles do)".into()),
              ("oracle".into(), "a qa battle has no patch for an oracle to test".into())]),
    ];
    for (name, spec, expected) in cases {
        assert_eq!(problems(&spec), expected, "{name}");
    }
}

/// A path or a command with a NUL character is the request's mistake
/// (`invalid_input` at its path), never an IO error later: no file name
/// and no `exec` argument can hold one. Every face decodes through here.
#[test]
fn a_nul_in_the_project_or_an_oracle_command_is_invalid_input() {
    const NUL: &str = "contains a NUL character, which no path, command or argument can hold";
    let cases: Vec<(Value, Problems)> = vec![
        (
            with(design_example(), "project", json!("/tmp/a\u{0}b")),
            one("project", NUL),
        ),
        (
            with(minimal_qa(), "project", json!("\u{0}")),
            one("project", NUL),
        ),
        (
            with(
                design_example(),
                "oracle",
                json!({"repro": "true\u{0}", "suite": "make\u{0} test"}),
            ),
            vec![
                ("oracle.repro".to_owned(), NUL.to_owned()),
                ("oracle.suite".to_owned(), NUL.to_owned()),
            ],
        ),
    ];
    for (spec, expected) in cases {
        assert_eq!(problems(&spec), expected, "{spec}");
    }
    // Elsewhere a NUL is only text: a prompt may hold one.
    let spec = with(design_example(), "prompt", json!("a\u{0}b"));
    assert_eq!(BattleSpec::from_json(&spec).unwrap().prompt, "a\u{0}b");
}

#[test]
fn every_problem_is_reported_at_once() {
    let spec = json!({"battle_type": "coding", "prompt": "",
        "contestants": [{"identity": "a", "model": "m"}], "oracle": {}, "colour": "red"});
    let paths: Vec<String> = problems(&spec).into_iter().map(|p| p.0).collect();
    assert_eq!(
        paths,
        [
            "colour",
            "prompt",
            "project",
            "contestants",
            "judge",
            "oracle"
        ]
    );
    for (value, message) in [
        (json!([1]), "a battle spec must be an object, got an array"),
        (json!(null), "a battle spec must be an object, got null"),
    ] {
        let e = BattleSpec::from_json(&value).unwrap_err();
        assert_eq!((e.message(), &e.details()["path"]), (message, &json!(".")));
    }
    let e = BattleSpec::from_json_str("{\"prompt\": ").unwrap_err();
    assert!(e.message().starts_with("the body is not valid JSON: "));
}

#[test]
fn identities_are_checked_against_the_configured_ones() {
    let spec = BattleSpec::from_json(&design_example()).unwrap();
    assert!(spec.validate_against(&["claude", "qwen", "local"]).is_ok());
    let e = spec.validate_against(&["qwen".to_owned()]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert_eq!(
        e.message(),
        "`contestants[0].identity`: unknown identity \"claude\"; known: qwen; \
         `judge.identity`: unknown identity \"local\"; known: qwen"
    );
    assert_eq!(e.details()["path"], "contestants[0].identity");
    let e = spec.validate_against::<&str>(&[]).unwrap_err();
    assert!(
        e.message().ends_with("none is configured"),
        "{}",
        e.message()
    );
}

#[test]
fn a_contestant_may_carry_its_own_instruction() {
    let spec = with(
        design_example(),
        "contestants",
        json!([{"identity": "claude", "model": "sonnet", "instruction": "Write the test first."},
               {"identity": "qwen", "model": "qwen3-coder", "instruction": null}]),
    );
    let spec = BattleSpec::from_json(&spec).unwrap();
    assert_eq!(
        spec.contestants,
        vec![
            ContestantSpec {
                agent: agent("claude", "sonnet"),
                instruction: Some("Write the test first.".into()),
            },
            agent("qwen", "qwen3-coder").into(),
        ]
    );
    // The prompt a contestant receives: the battle's, a blank line, its own.
    assert_eq!(
        spec.contestants[0].prompt(&spec.prompt),
        "Fix the failing test in calc.py\n\nWrite the test first."
    );
    assert_eq!(
        spec.contestants[1].prompt(&spec.prompt),
        "Fix the failing test in calc.py"
    );
    assert_eq!(contestant_prompt("p", Some("i")), "p\n\ni");
    // The canonical form carries an instruction only where there is one.
    let canonical = spec.to_json();
    assert_eq!(
        canonical["contestants"],
        json!([{"identity": "claude", "model": "sonnet", "instruction": "Write the test first."},
               {"identity": "qwen", "model": "qwen3-coder"}])
    );
    assert_eq!(BattleSpec::from_json(&canonical).unwrap(), spec);
    // Exactly the limit is fine; characters, not bytes, count.
    let long = "é".repeat(MAX_INSTRUCTION_CHARS);
    let spec = with(
        design_example(),
        "contestants",
        json!([{"identity": "a", "model": "m", "instruction": long}, {"identity": "b", "model": "m"}]),
    );
    assert_eq!(
        BattleSpec::from_json(&spec).unwrap().contestants[0].instruction,
        Some(long)
    );
    // One pair twice is a duplicate whatever its instructions say.
    let spec = with(
        design_example(),
        "contestants",
        json!([{"identity": "a", "model": "m", "instruction": "x"}, {"identity": "a", "model": "m", "instruction": "y"}]),
    );
    assert_eq!(
        problems(&spec),
        one("contestants[1]", "duplicate of contestants[0] (a/m)")
    );
}

fn name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9]{0,6}"
}

proptest! {
    /// The canonical JSON form reads back as the same spec.
    #[test]
    fn to_json_round_trips(
        coding in any::<bool>(),
        prompt in "[^\\s]{1,20}",
        names in prop::collection::btree_set(name(), 2..=6),
        judge in name(),
        snapshot in any::<bool>(),
        oracle in prop::option::of((prop::option::of("[a-z ]{0,5}x"), prop::option::of("[a-z ]{0,5}y"), 1u64..100_000,
            prop_oneof![Just(NetworkPolicy::Deny), Just(NetworkPolicy::Allow),
                        prop::collection::vec(1u16.., 1..4).prop_map(|mut ports| {
                            ports.sort_unstable();
                            ports.dedup();
                            NetworkPolicy::Ports(ports)
                        })])),
        timeout_ms in 1u64..10_000_000,
        keep in any::<bool>(),
        instructions in prop::collection::vec(prop::option::of("[a-z]\\PC{0,30}"), 6),
    ) {
        let oracle = oracle.filter(|o| coding && (o.0.is_some() || o.1.is_some()));
        let spec = BattleSpec {
            battle_type: if coding { BattleType::Coding } else { BattleType::Qa },
            prompt,
            project: coding.then(|| "/repo".to_owned()),
            base: if coding && snapshot { Base::Snapshot } else { Base::Ref("HEAD".into()) },
            contestants: names.iter().zip(&instructions).map(|(n, i)| ContestantSpec { agent: agent(n, "m"), instruction: i.clone() }).collect(),
            judge: agent(&judge, "j"),
            oracle: oracle.map(|(repro, suite, ms, network)| OracleSpec { repro, suite, timeout: Duration::from_millis(ms), network }),
            contestant_timeout: Duration::from_millis(timeout_ms),
            keep_worktrees: keep,
        };
        let back = BattleSpec::from_json(&spec.to_json());
        prop_assert_eq!(back, Ok(spec));
    }
}
