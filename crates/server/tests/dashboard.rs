//! The dashboard's page, assets, login and the cross-site guard over real
//! HTTP on loopback (the pages themselves run in a real browser:
//! `tests/dashboard/`, a stage of the test command).

mod common;

use coderig::agent::Registry;
use coderig_server::Config;
use common::{assert_error, json_of, spawn_server};
use reqwest::header::{CONTENT_SECURITY_POLICY, CONTENT_TYPE, SET_COOKIE};
use reqwest::StatusCode;
use serde_json::json;

fn client() -> reqwest::Client {
    common::install_crypto();
    reqwest::Client::new()
}

/// Sends a request; its status and JSON body.
async fn send(request: reqwest::RequestBuilder) -> (StatusCode, serde_json::Value) {
    json_of(request.send().await.unwrap()).await
}

// `/` is the page, `/ui/*` its assets, each with a policy that allows this
// server's own scripts and connections only; all of it well under 150 KB.
#[tokio::test]
async fn the_page_and_its_assets_are_served_with_a_strict_policy() {
    let url = spawn_server(Config::default()).await;
    let client = client();
    let mut total = 0;
    for (path, kind) in [
        ("/", "text/html"),
        ("/ui/app.js", "text/javascript"),
        ("/ui/views.js", "text/javascript"),
        ("/ui/style.css", "text/css"),
    ] {
        let response = client.get(format!("{url}{path}")).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let content_type = response.headers()[CONTENT_TYPE]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(content_type.starts_with(kind), "{path}: {content_type}");
        let csp = response.headers()[CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(
            csp.contains("default-src 'none'") && csp.contains("script-src 'self'"),
            "{csp}"
        );
        total += response.bytes().await.unwrap().len();
    }
    assert!(total < 150 * 1024, "the first load is {total} bytes");
    let missing = client
        .get(format!("{url}/ui/nope.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}

// Without a token: another site's page cannot drive the loopback API (its
// browser names it in `Origin`), and a DNS-rebound name is refused.
#[tokio::test]
async fn without_a_token_cross_site_writes_and_foreign_hosts_are_refused() {
    let url = spawn_server(Config::default()).await;
    let client = client();
    let run =
        json!({"spec": {"name": "x", "steps": [{"id": "a", "kind": "command", "shell": "true"}]}});
    let (status, body) = send(
        client
            .post(format!("{url}/api/runs"))
            .header("origin", "http://evil.example")
            .json(&run),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_error(&body, "unauthorized");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("cross-site"));
    let host = url.trim_start_matches("http://");
    let same = client
        .post(format!("{url}/api/flows/validate"))
        .header("origin", format!("http://{host}"))
        .json(&json!({"spec": {"name": "x", "steps": []}}))
        .send()
        .await
        .unwrap();
    assert_ne!(
        same.status(),
        StatusCode::UNAUTHORIZED,
        "the server's own page may write"
    );
    let (status, body) = send(
        client
            .get(format!("{url}/api/health"))
            .header("host", "rebound.example"),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("loopback"));
    // Clients that are not browsers send no Origin: unchanged.
    let (status, _) = send(client.get(format!("{url}/api/health"))).await;
    assert_eq!(status, StatusCode::OK);
}

// With a token: the page loads and asks for it; the right token sets an
// HttpOnly, SameSite=Strict cookie that reads the API, and writes only
// with the dashboard's header.
#[tokio::test]
async fn with_a_token_the_login_sets_a_cookie_that_writes_only_from_the_dashboard() {
    let url = common::spawn_server_with(
        Config {
            token: Some("s3cret".into()),
            ..Config::default()
        },
        Registry::new(),
    )
    .await;
    let client = client();
    assert_eq!(
        client.get(format!("{url}/")).send().await.unwrap().status(),
        StatusCode::OK
    );
    let (_, state) = send(client.get(format!("{url}/ui/session"))).await;
    assert_eq!(
        state,
        json!({"token_required": true, "authenticated": false})
    );
    let (status, body) = send(
        client
            .post(format!("{url}/ui/session"))
            .json(&json!({"token": "wrong"})),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_error(&body, "unauthorized");
    let login = client
        .post(format!("{url}/ui/session"))
        .json(&json!({"token": "s3cret"}))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), StatusCode::NO_CONTENT);
    let cookie = login.headers()[SET_COOKIE].to_str().unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let session = cookie.split(';').next().unwrap().to_owned();
    let read = client
        .get(format!("{url}/api/battles"))
        .header("cookie", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), StatusCode::OK);
    let (_, state) = send(
        client
            .get(format!("{url}/ui/session"))
            .header("cookie", &session),
    )
    .await;
    assert_eq!(state["authenticated"], true);
    let validate = json!({"spec": {"name": "x", "steps": []}});
    let bare = client
        .post(format!("{url}/api/flows/validate"))
        .header("cookie", &session)
        .json(&validate)
        .send()
        .await
        .unwrap();
    assert_eq!(
        bare.status(),
        StatusCode::UNAUTHORIZED,
        "a cookie alone does not write"
    );
    let dashboard = client
        .post(format!("{url}/api/flows/validate"))
        .header("cookie", &session)
        .header("x-coderig-dashboard", "1")
        .json(&validate)
        .send()
        .await
        .unwrap();
    assert_ne!(dashboard.status(), StatusCode::UNAUTHORIZED);
}
