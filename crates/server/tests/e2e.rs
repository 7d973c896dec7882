//! End-to-end tests over real HTTP on 127.0.0.1: the router served on an
//! ephemeral port, and the compiled `coderig` binary.

mod common;

use coderig_server::Config;
use common::{assert_error, json_of, spawn_server};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

#[tokio::test]
async fn health_reports_ok_and_version() {
    let base = spawn_server(Config::default()).await;
    let (status, body) = json_of(reqwest::get(format!("{base}/api/health")).await.unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({"ok": true, "version": env!("CARGO_PKG_VERSION"), "store": "sqlite"})
    );
}

#[tokio::test]
async fn unknown_route_is_a_json_404() {
    let base = spawn_server(Config::default()).await;
    let (status, body) = json_of(reqwest::get(format!("{base}/api/nope")).await.unwrap()).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Not `not_found`: that kind is the core's edit refusal (with `nearest`).
    assert_error(&body, "route_not_found");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("/api/nope"));
}

#[tokio::test]
async fn wrong_method_is_a_json_405() {
    let base = spawn_server(Config::default()).await;
    let client = reqwest::Client::new();
    let (status, body) = json_of(
        client
            .post(format!("{base}/api/health"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_error(&body, "method_not_allowed");
}

#[tokio::test]
async fn xxhash32_route_matches_every_shared_vector() {
    let vectors: Value =
        serde_json::from_str(include_str!("../../../tests/vectors/hashline.json")).unwrap();
    let cases = vectors["xxhash32"].as_array().unwrap();
    assert!(cases.len() >= 40);
    let base = spawn_server(Config::default()).await;
    let client = reqwest::Client::new();
    for case in cases {
        let request = json!({"data": case["input"], "seed": case["seed"]});
        let response = client
            .post(format!("{base}/api/xxhash32"))
            .json(&request)
            .send()
            .await
            .unwrap();
        let (status, body) = json_of(response).await;
        assert_eq!(status, StatusCode::OK, "{case}: {body}");
        assert_eq!(body, json!({"ok": true, "hash": case["hash"]}), "{case}");
    }
}

#[tokio::test]
async fn xxhash32_seed_defaults_to_zero() {
    let base = spawn_server(Config::default()).await;
    let client = reqwest::Client::new();
    let response = client
        .post(format!("{base}/api/xxhash32"))
        .json(&json!({"data": "abc"}))
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(response).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["hash"], coderig::xxhash32(b"abc", 0));
}

#[tokio::test]
async fn malformed_json_is_a_json_400() {
    let base = spawn_server(Config::default()).await;
    let client = reqwest::Client::new();
    let response = client
        .post(format!("{base}/api/xxhash32"))
        .header("content-type", "application/json")
        .body("{\"data\": ")
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(response).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&body, "invalid_input");
}

/// Every malformed request is the core's `invalid_input`, always a 400 (no
/// more 415 / 422 by how axum's extractor classified it), with the path of
/// the bad field when there is one.
#[tokio::test]
async fn wrong_shapes_and_content_types_are_json_invalid_input() {
    let base = spawn_server(Config::default()).await;
    let client = reqwest::Client::new();
    let url = format!("{base}/api/xxhash32");
    let cases: Vec<(reqwest::RequestBuilder, Option<&str>, &str)> = vec![
        // seed out of u32 range
        (
            client.post(&url).json(&json!({"data": "a", "seed": -1})),
            Some("seed"),
            "`seed`: must be an integer from 0 to 4294967295, got -1",
        ),
        (
            client
                .post(&url)
                .json(&json!({"data": "a", "seed": 4294967296u64})),
            Some("seed"),
            "`seed`: must be an integer from 0 to 4294967295, got 4294967296",
        ),
        // missing / wrongly typed / unknown fields
        (
            client.post(&url).json(&json!({})),
            Some("."),
            "missing field `data`",
        ),
        (
            client.post(&url).json(&json!({"data": 5})),
            Some("data"),
            "`data`: invalid type: integer `5`, expected a string",
        ),
        (
            client.post(&url).json(&json!({"data": "a", "sed": 1})),
            Some("sed"),
            "`sed`: unknown field `sed`, expected `data` or `seed`",
        ),
        (
            client.post(&url).json(&json!(["a"])),
            Some("."),
            "the request must be an object, got an array",
        ),
        // not declared as JSON
        (
            client.post(&url).body("{\"data\": \"a\"}"),
            None,
            "the body must be JSON sent with `Content-Type: application/json`",
        ),
        (
            client
                .post(&url)
                .header("content-type", "text/plain")
                .body("{\"data\": \"a\"}"),
            None,
            "the body must be JSON sent with `Content-Type: application/json`",
        ),
    ];
    for (request, path, message) in cases {
        let (status, body) = json_of(request.send().await.unwrap()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_error(&body, "invalid_input");
        assert_eq!(body["error"]["message"], message, "{body}");
        assert_eq!(
            body["error"].get("path").and_then(Value::as_str),
            path,
            "{body}"
        );
    }
}

#[tokio::test]
async fn xxhash32_takes_an_integral_float_seed() {
    let base = spawn_server(Config::default()).await;
    let response = reqwest::Client::new()
        .post(format!("{base}/api/xxhash32"))
        .json(&json!({"data": "abc", "seed": 33054.0}))
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(response).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["hash"], coderig::xxhash32(b"abc", 33054));
}

#[tokio::test]
async fn oversize_body_is_a_json_413() {
    let base = spawn_server(Config {
        max_body_bytes: 1024,
        ..Config::default()
    })
    .await;
    let client = reqwest::Client::new();
    let url = format!("{base}/api/xxhash32");
    let small = client
        .post(&url)
        .json(&json!({"data": "x".repeat(512)}))
        .send()
        .await
        .unwrap();
    assert_eq!(small.status(), StatusCode::OK);
    let big = client
        .post(&url)
        .json(&json!({"data": "x".repeat(4096)}))
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(big).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_error(&body, "payload_too_large");
}

/// Kills the child when dropped, so a failing assertion cannot leak it.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn the_binary_serves_on_the_port_it_prints() {
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_coderig"))
        .args(["serve", "--port", "0"])
        .current_dir(dir.path())
        .env_remove("CODERIG_HOST")
        .env_remove("CODERIG_PORT")
        .env_remove("CODERIG_CONFIG")
        .env_remove("CODERIG_DATA_DIR")
        .env_remove("DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let stdout = child.0.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        line
    })
    .await
    .unwrap();
    let url = line
        .trim()
        .strip_prefix("coderig listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_owned();
    let addr: SocketAddr = url.strip_prefix("http://").unwrap().parse().unwrap();
    common::install_crypto();
    assert!(
        addr.ip().is_loopback(),
        "must bind loopback by default: {addr}"
    );
    assert_ne!(addr.port(), 0);
    let (status, body) = json_of(reqwest::get(format!("{url}/api/health")).await.unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["ok"], true);
    assert_eq!(body["store"], "sqlite");
    // The default data dir is ./.coderig, created at start.
    assert!(dir.path().join(".coderig/coderig.db").is_file());
    child.0.kill().unwrap();
}
