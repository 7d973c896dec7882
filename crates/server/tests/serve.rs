//! `coderig serve` as a process: the store it opens at start (SQLite in
//! `--data-dir`, PostgreSQL at `--db` when `DATABASE_URL` names one), the
//! agents of its `coderig.toml` over real HTTP, and the start-up failures
//! (a bad URL, a missing config) with their exit codes.

mod common;

use common::get;
use common::server::{serve, serve_command, start_server};
use reqwest::StatusCode;
use serde_json::json;

const RIG: &str = r#"
[agents.alice]
kind = "scripted"
script = [ { text = "done" } ]
scripts = { slow = [ { sleep_ms = 5000 } ] }
[agents.zed]
kind = "scripted"
lane = "local"
script = [ { text = "hi" } ]
"#;

#[tokio::test]
async fn serve_opens_sqlite_in_the_data_dir_and_answers_its_agents() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("coderig.toml"), RIG).unwrap();
    let data = dir.path().join("data/nested");
    let server = serve(dir.path(), &["--data-dir", data.to_str().unwrap()]).await;
    assert!(data.join("coderig.db").is_file());
    let (status, body) = get(format!("{}/api/health", server.url)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["store"], "sqlite");
    let (status, body) = get(format!("{}/api/agents", server.url)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!([
            {"identity": "alice", "kind": "scripted", "lane": "cloud", "installed": true,
             "reachable": true, "models": ["slow"], "sandbox": "none"},
            {"identity": "zed", "kind": "scripted", "lane": "local", "installed": true,
             "reachable": true, "models": [], "sandbox": "none"},
        ])
    );
}

#[tokio::test]
async fn serve_takes_an_sqlite_url_and_a_config_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("rig.toml");
    std::fs::write(&config, RIG).unwrap();
    let file = dir.path().join("other.db");
    let url = format!("sqlite://{}", file.display());
    let server = serve(
        dir.path(),
        &["--db", &url, "--config", config.to_str().unwrap()],
    )
    .await;
    assert!(file.is_file());
    // The data dir holds the arena's worktrees now; the store is elsewhere.
    assert!(!dir.path().join(".coderig/coderig.db").exists());
    let (_, body) = get(format!("{}/api/agents", server.url)).await;
    assert_eq!(body.as_array().unwrap().len(), 2, "{body}");
}

#[tokio::test]
async fn the_agents_route_is_in_the_openapi_document() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &["--data-dir", "d"]).await;
    let (_, agents) = get(format!("{}/api/agents", server.url)).await;
    assert_eq!(agents, json!([]));
    let (_, doc) = get(format!("{}/api/openapi.json", server.url)).await;
    let response = &doc["paths"]["/api/agents"]["get"]["responses"]["200"];
    let schema = &response["content"]["application/json"]["schema"];
    assert_eq!(schema["type"], "array", "{response}");
    assert_eq!(schema["items"]["$ref"], "#/components/schemas/AgentInfo");
    let info = &doc["components"]["schemas"]["AgentInfo"];
    for field in ["identity", "kind", "lane", "installed", "models"] {
        assert!(
            info["required"].as_array().unwrap().contains(&json!(field)),
            "{field}: {info}"
        );
    }
}

/// Start-up failures: (args, exit code, what stderr says).
#[test]
fn bad_stores_and_configs_fail_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], i32, &str); 3] = [
        (
            &["--db", "mysql://u@h/db"],
            2,
            "a store is postgres://… (or postgresql://…), sqlite://PATH or a file path, not mysql://",
        ),
        (&["--config", "missing.toml"], 3, "cannot read missing.toml"),
        (
            &["--db", "postgres://u:secret@127.0.0.1:5432/db?sslmode=bogus"],
            2,
            "not a PostgreSQL URL",
        ),
    ];
    for (args, code, message) in cases {
        let output = serve_command(dir.path(), args).output().unwrap();
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("secret"),
            "the password is shown: {stderr}"
        );
        assert!(output.stdout.is_empty(), "{args:?}");
    }
}

/// Exposure and project roots are checked at start: a non-loopback
/// address without a token, an empty token and a missing project root are
/// refused with exit code 2 before anything is bound.
#[test]
fn exposure_and_project_roots_are_checked_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &["--host", "0.0.0.0"],
            "refusing to listen on 0.0.0.0 without a token",
        ),
        (
            &["--host", "::"],
            "refusing to listen on :: without a token",
        ),
        (&["--token", " "], "--token / CODERIG_TOKEN is empty"),
        (&["--project-root", "no/such/dir"], "no/such/dir"),
    ];
    for (args, message) in cases {
        let output = serve_command(dir.path(), args).output().unwrap();
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}");
    }
    assert!(!dir.path().join(".coderig").exists(), "nothing opened");
}

/// With a token (here from CODERIG_TOKEN) a non-loopback address serves,
/// and every route but health wants the token.
#[tokio::test]
async fn a_token_from_the_environment_guards_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = serve_command(dir.path(), &["--host", "0.0.0.0", "--data-dir", "d"]);
    command.env("CODERIG_TOKEN", "tok-3");
    let server = start_server(command).await;
    let port = server.url.rsplit(':').next().unwrap().to_owned();
    let base = format!("http://127.0.0.1:{port}");
    let (status, _) = get(format!("{base}/api/health")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = get(format!("{base}/api/agents")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    common::assert_error(&body, "unauthorized");
    let client = reqwest::Client::new();
    let response = client
        .get(format!("{base}/api/agents"))
        .bearer_auth("tok-3")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn serve_postgres_opens_the_database_url() {
    let Some(url) = common::database_url("serve_postgres") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &["--db", &url]).await;
    let (status, body) = get(format!("{}/api/health", server.url)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["store"], "postgres");
    assert!(
        !dir.path().join(".coderig/coderig.db").exists(),
        "no SQLite beside it"
    );
    // DATABASE_URL itself is read too.
    let mut command = serve_command(dir.path(), &[]);
    command.env("DATABASE_URL", &url);
    let second = start_server(command).await;
    let (_, body) = get(format!("{}/api/health", second.url)).await;
    assert_eq!(body["store"], "postgres");
    assert!(
        !dir.path().join(".coderig/coderig.db").exists(),
        "no SQLite beside it"
    );
}
