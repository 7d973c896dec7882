//! The OpenAPI document describes the server that serves it, over real
//! HTTP: a server without a token declares no security and no 401, one
//! with a token declares both (and answers them); every error body the
//! routes send for bad requests is the one its status declares (the JSON
//! Schema of the document, checked by `common::schema`).

mod common;

use coderig_server::Config;
use common::schema::{assert_conforms, violations};
use common::{json_of, spawn_server};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

async fn document(base: &str, token: Option<&str>) -> Value {
    let mut request = reqwest::Client::new().get(format!("{base}/api/openapi.json"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let (status, doc) = json_of(request.send().await.unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    doc
}

/// `(method, path, operation)` of every operation of `doc`.
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .iter()
                .map(move |(method, op)| (method.to_ascii_uppercase(), path.clone(), op.clone()))
        })
        .collect()
}

/// The path with its parameters filled in.
fn concrete(path: &str) -> String {
    path.replace("{id}", "0123456789abcdef0123456789abcdef")
        .replace("{cid}", "0123456789abcdef0123456789abcdef-c1")
        .replace("{step}", "s")
}

#[tokio::test]
async fn without_a_token_no_route_requires_authorization() {
    let base = spawn_server(Config::default()).await;
    let doc = document(&base, None).await;
    assert_eq!(doc, coderig_server::openapi::document());
    assert!(doc.get("security").is_none(), "{}", doc["security"]);
    assert!(
        doc["components"].get("securitySchemes").is_none(),
        "{}",
        doc["components"]["securitySchemes"]
    );
    let client = reqwest::Client::new();
    for (method, path, op) in operations(&doc) {
        assert!(
            op["responses"].get("401").is_none(),
            "{method} {path} declares a 401"
        );
        // No requirement but the empty one (open).
        if let Some(security) = op.get("security") {
            assert_eq!(security, &json!([{}]), "{method} {path}");
        }
        // And the server agrees: no request is refused for a missing token.
        let request = client.request(
            Method::from_bytes(method.as_bytes()).unwrap(),
            format!("{base}{}", concrete(&path)),
        );
        let request = if method == "GET" {
            request
        } else {
            request.json(&json!({}))
        };
        if path == "/api/events" {
            continue; // a stream that does not end: tested in events.rs
        }
        let status = request.send().await.unwrap().status();
        assert_ne!(status, StatusCode::UNAUTHORIZED, "{method} {path}");
    }
}

#[tokio::test]
async fn with_a_token_every_route_but_health_requires_it_and_says_so() {
    let config = Config {
        token: Some("s3cret".into()),
        ..Config::default()
    };
    let base = spawn_server(config.clone()).await;
    let doc = document(&base, Some("s3cret")).await;
    assert_eq!(doc, coderig_server::openapi::document_for(&config));
    assert_eq!(doc["security"], json!([{"bearer": []}]));
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    let client = reqwest::Client::new();
    for (method, path, op) in operations(&doc) {
        let open = path == "/api/health";
        assert_eq!(
            op["responses"].get("401").is_none(),
            open,
            "{method} {path}"
        );
        if open || path == "/api/events" {
            continue;
        }
        let response = client
            .request(
                Method::from_bytes(method.as_bytes()).unwrap(),
                format!("{base}{}", concrete(&path)),
            )
            .send()
            .await
            .unwrap();
        let (status, body) = json_of(response).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path}");
        let schema = op["responses"]["401"]["content"]["application/json"]["schema"].clone();
        let found = violations(&doc, &schema, &body);
        assert!(found.is_empty(), "{method} {path}: {found:?}");
    }
}

/// Bad requests to every route — a body that is not JSON, one of the wrong
/// shape, an unknown query parameter, an id that names nothing, a server
/// without an arena or a flow engine — each answered with an error whose
/// status the route declares and whose body is that status's schema.
#[tokio::test]
async fn every_error_body_is_the_one_its_status_declares() {
    let base = spawn_server(Config::default()).await;
    let doc = document(&base, None).await;
    let client = reqwest::Client::new();
    let mut checked = 0;
    for (method, path, op) in operations(&doc) {
        if path == "/api/events" {
            continue; // its refusals: events.rs
        }
        let url = format!("{base}{}", concrete(&path));
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let mut requests = vec![client
            .request(method.clone(), format!("{url}?bogus=1"))
            .json(&json!({}))];
        if method != Method::GET {
            requests.push(
                client
                    .request(method.clone(), &url)
                    .header("content-type", "application/json")
                    .body("{not json"),
            );
            requests.push(client.request(method.clone(), &url).json(&json!([1, 2])));
            requests.push(
                client
                    .request(method.clone(), &url)
                    .json(&json!({"project": "/tmp/a\u{0}b", "path": "a\u{0}b", "content": "x"})),
            );
        }
        for request in requests {
            let response = request.send().await.unwrap();
            let status = response.status();
            if status.is_success() {
                continue;
            }
            let (_, body) = json_of(response).await;
            let declared = &op["responses"][status.as_str()];
            assert!(
                declared.is_object(),
                "{method} {path}: {status} is not declared: {body}"
            );
            let schema = declared["content"]["application/json"]["schema"].clone();
            let found = violations(&doc, &schema, &body);
            assert!(found.is_empty(), "{method} {path} {status}: {found:#?}");
            checked += 1;
        }
    }
    assert!(checked > 60, "{checked}");
}

/// A NUL in an edit's `path` (which only picks the guards' language) is
/// no path on disk: the edit is applied, never a 500.
#[tokio::test]
async fn a_nul_in_an_edits_path_is_only_a_name() {
    let base = spawn_server(Config::default()).await;
    let doc = document(&base, None).await;
    let response = reqwest::Client::new()
        .post(format!("{base}/api/edit"))
        .json(&json!({"content": "a\n", "old": "a", "new": "b", "path": "x\u{0}.py"}))
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(response).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_conforms(&doc, "EditResponse", &body);
}
