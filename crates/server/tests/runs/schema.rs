//! The FlowSpec schema of `POST /api/runs` reads durations and sandbox networks exactly as the decoder does.

use super::*;

/// The FlowSpec schema of `POST /api/runs` reads durations exactly as the
/// decoder does: a string matches its pattern if and only if the decoder
/// takes it (within the 100-year range), for a step's `timeout` (more than
/// zero) and a retry's `initial` (zero allowed).
#[test]
fn the_spec_schema_reads_durations_as_the_decoder_does() {
    let doc = coderig_server::openapi::document();
    let spec = &doc["components"]["schemas"]["FlowSpec"];
    let variants = spec["properties"]["steps"]["items"]["oneOf"]
        .as_array()
        .unwrap();
    let command = variants
        .iter()
        .find(|v| v["title"] == "command (argv)")
        .unwrap();
    let pattern_of = |schema: &Value| -> regex::Regex {
        let string = schema["anyOf"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["type"] == "string")
            .unwrap();
        regex::Regex::new(string["pattern"].as_str().unwrap()).unwrap()
    };
    let timeout = pattern_of(&command["properties"]["timeout"]);
    let initial = pattern_of(&command["properties"]["retry"]["properties"]["initial"]);
    let texts = [
        "1",
        "10",
        "10s",
        "0.5s",
        ".5",
        "1.",
        " 5 m ",
        "5MS",
        "5Sec",
        "2hrs",
        "3 mins",
        "20m",
        "500ms",
        "1h",
        "0",
        "0s",
        "0.0",
        "00.000ms",
        "",
        " ",
        "5x",
        "1.2.3",
        "-1",
        "1e3",
        "5 s s",
        "abc",
        "10sec",
        "\u{a0}7s",
        "7s\u{2003}",
        "s",
        ".",
        "5 h r",
    ];
    for text in texts {
        let step = |retry: Value, timeout: Value| json!({"steps": [{"id": "a", "kind": "command", "argv": ["true"], "timeout": timeout, "retry": retry}]});
        let decoded = coderig::flow::FlowSpec::from_json(&step(json!(null), json!(text))).is_ok();
        assert_eq!(timeout.is_match(text), decoded, "timeout {text:?}");
        let decoded = coderig::flow::FlowSpec::from_json(&step(
            json!({"initial": text, "max": "3.2e9"}),
            json!(null),
        ));
        // `max` above is no duration: only `initial`'s own problem counts.
        let initial_ok = match decoded {
            Ok(_) => true,
            Err(e) => !e.details()["problems"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["path"] == "steps[0].retry.initial"),
        };
        assert_eq!(initial.is_match(text), initial_ok, "retry.initial {text:?}");
    }
}

/// A command step's `sandbox.network` in the FlowSpec schema: a string
/// matches its pattern if and only if the decoder takes it (the strings a
/// schema fuzzer tries: case, whitespace, signs, zeros, the port range,
/// empty items).
#[test]
fn the_spec_schema_reads_a_sandbox_network_as_the_decoder_does() {
    let doc = coderig_server::openapi::document();
    let variants = doc["components"]["schemas"]["FlowSpec"]["properties"]["steps"]["items"]
        ["oneOf"]
        .as_array()
        .unwrap();
    for title in ["command (argv)", "command (shell)"] {
        let command = variants.iter().find(|v| v["title"] == title).unwrap();
        let network = &command["properties"]["sandbox"]["properties"]["network"];
        let pattern = regex::Regex::new(network["pattern"].as_str().unwrap()).unwrap();
        let texts = [
            "allow",
            "deny",
            "loopback:8080",
            "loopback:1",
            "loopback:65535",
            "loopback:65536",
            "loopback:0",
            "loopback:00",
            "loopback:0080",
            "loopback:+80",
            "loopback:-80",
            "loopback:+",
            "loopback: 80 ,\t443",
            "loopback:\u{a0}80\u{2003}",
            "loopback:80,",
            "loopback:,80",
            "loopback:80,,443",
            "loopback:",
            "loopback",
            "loopback :80",
            "loopback:80 443",
            "loopback:99999",
            "loopback:6553",
            "loopback:65529",
            "Allow",
            "DENY",
            " allow",
            "allow ",
            "",
            "open",
        ];
        for text in texts {
            let spec = json!({"steps": [{"id": "a", "kind": "command", "argv": ["true"], "sandbox": {"network": text}}]});
            let decoded = coderig::flow::FlowSpec::from_json(&spec).is_ok();
            assert_eq!(pattern.is_match(text), decoded, "{title}: network {text:?}");
        }
    }
}
