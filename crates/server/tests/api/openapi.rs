//! The OpenAPI document lists exactly the routes the server serves, with the statuses each can answer.

use super::*;

#[tokio::test]
async fn openapi_lists_exactly_the_served_routes() {
    let base = spawn_server(Config::default()).await;
    let (status, doc) = json_of(
        reqwest::get(format!("{base}/api/openapi.json"))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(doc["openapi"], "3.1.0");
    let documented: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .map(move |method| (method.to_ascii_uppercase(), path.clone()))
        })
        .collect();
    let served: BTreeSet<(String, String)> = coderig_server::route_list()
        .into_iter()
        .map(|(method, path)| (method.to_string(), path.to_owned()))
        .collect();
    assert_eq!(documented, served);

    // every listed route really is served (neither the 404 nor the 405 fallback)
    let client = reqwest::Client::new();
    for (method, path) in &served {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let response = client
            .request(method.clone(), format!("{base}{path}"))
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        // A routed 404 is an unknown id (`{id}` taken literally), the
        // fallback's is `route_not_found`.
        let status = response.status();
        let fallback = match status {
            StatusCode::METHOD_NOT_ALLOWED => true,
            StatusCode::NOT_FOUND => response
                .json::<Value>()
                .await
                .map_or(true, |body| body["error"]["kind"] == "route_not_found"),
            _ => false,
        };
        assert!(!fallback, "{method} {path} answered {status}");
    }

    // every $ref resolves
    let text = doc.to_string();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for reference in text.split("\"#/components/schemas/").skip(1) {
        let name = &reference[..reference.find('"').unwrap()];
        assert!(schemas.contains_key(name), "dangling $ref {name}");
    }

    // every route documents each answer it can give, errors with an error
    // body whose kinds are the ones that status carries
    let refusals: BTreeSet<&str> =
        ["/api/edit", "/api/hashline/apply", "/api/hashline/validate"].into();
    let schema_of = |response: &Value| -> Value {
        let reference = response["content"]["application/json"]["schema"]["$ref"]
            .as_str()
            .unwrap_or_else(|| panic!("no schema $ref in {response}"));
        schemas[reference.trim_start_matches("#/components/schemas/")].clone()
    };
    for (method, path) in &served {
        let responses = &doc["paths"][path][method.to_ascii_lowercase()]["responses"];
        let mut statuses: Vec<&str> = responses
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        statuses.sort_unstable();
        // 500 everywhere (io, internal); no 401 without --token (below).
        let battle = path.starts_with("/api/battles") || path == "/api/leaderboard";
        let run = path.starts_with("/api/runs") || path == "/api/flows";
        let expected: Vec<&str> = match (method.as_str(), refusals.contains(path.as_str())) {
            // The battle routes: 404 unknown ids, 409 a battle in the wrong
            // state (every server runs an arena: no 503).
            _ if battle => battle_statuses(method, path),
            _ if run => run_statuses(method, path),
            ("GET", _) if path == "/api/health" => vec!["200", "500"],
            ("GET", _) if path == "/api/events" => vec!["200", "400", "500"],
            ("GET", _) => vec!["200", "500"],
            (_, false) => vec!["200", "400", "413", "500"],
            (_, true) => vec!["200", "400", "413", "422", "500"],
        };
        assert_eq!(statuses, expected, "{method} {path}");
        for status in &statuses[1..] {
            let schema = schema_of(&responses[*status]);
            let kinds = &schema["properties"]["error"]["properties"]["kind"]["enum"];
            let kinds: Vec<&str> = kinds
                .as_array()
                .unwrap_or_else(|| panic!("{method} {path} {status}: not an error body"))
                .iter()
                .map(|k| k.as_str().unwrap())
                .collect();
            for kind in kinds {
                let status_of = match kind {
                    "payload_too_large" => 413,
                    "unauthorized" => 401,
                    k => k.parse::<coderig::ErrorKind>().unwrap().http_status(),
                };
                assert_eq!(status_of.to_string(), *status, "{method} {path}: {kind}");
            }
        }
    }
}

/// The documented statuses of each flow and run route, sorted: 404 unknown
/// ids, 409 a run or step in the wrong state (every server runs a flow
/// engine: no 503).
fn run_statuses(method: &str, path: &str) -> Vec<&'static str> {
    match (method, path) {
        ("GET", "/api/flows") => vec!["200", "500"],
        ("POST", "/api/runs") => vec!["201", "400", "413", "500"],
        ("GET", "/api/runs") => vec!["200", "400", "500"],
        ("GET", _) => vec!["200", "404", "500"],
        ("POST", "/api/runs/{id}/cancel") => vec!["200", "404", "409", "500"],
        _ => vec!["200", "400", "404", "409", "413", "500"],
    }
}

/// The documented statuses of each battle route, sorted.
fn battle_statuses(method: &str, path: &str) -> Vec<&'static str> {
    match (method, path) {
        ("POST", "/api/battles") => vec!["201", "400", "413", "500"],
        ("GET", "/api/battles") | ("GET", "/api/leaderboard") => vec!["200", "400", "500"],
        ("GET", _) => vec!["200", "404", "500"],
        ("POST", "/api/battles/{id}/stop") => vec!["200", "404", "409", "500"],
        ("POST", "/api/battles/{id}/analyze") | ("POST", "/api/battles/{id}/cross-examine") => {
            vec!["202", "400", "404", "409", "413", "500"]
        }
        _ => vec!["200", "400", "404", "409", "413", "500"],
    }
}
