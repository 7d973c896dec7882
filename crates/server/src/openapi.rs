//! The OpenAPI 3.1 document served at `GET /api/openapi.json`, assembled
//! per server: utoipa generates it from the handlers' `#[utoipa::path]`
//! attributes and the schemas of the types they name (the core's behind
//! its `openapi` feature, the server's own in [`crate::schema`]); this
//! module only puts it together. It describes the server as it runs
//! ([`document_for`]): with a token (`--token`), the bearer scheme, a
//! document-wide `security` requirement and a 401 on every route but `GET
//! /api/health`; without one, no route requires anything. The tests check
//! that its paths are exactly the routes the router serves and that the
//! bodies the server sends are the ones it declares, and the fuzz stage of
//! `scripts/test.sh` (schemathesis) that the server accepts what it says and
//! answers what it declares.

use crate::schema::{raw_schemas, ErrorBody, ServerError, SseGap, Unauthorized};
use crate::{routes, Config};
use coderig::arena::BattleSpec;
use coderig::event::{
    AgentOutput, BattleStarted, BattleUpdated, ContestantUpdated, RunUpdated, StepUpdated,
    TaskRescued,
};
use coderig::flow::FlowSpec;
use serde_json::{json, Value};
use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
use utoipa::{Modify, OpenApi, ToSchema};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "coderig",
        description = "The reference HTTP face of coderig. Every response is JSON but the event \
            stream; errors are {ok: false, error: {kind, code, message, ...details}} with the \
            core's kinds (400 invalid_input, 422 edit refusals, 500 io and internal) and the ones \
            only HTTP has (404 route_not_found, 405 method_not_allowed, 413 payload_too_large, \
            401 unauthorized). Offsets are UTF-8 byte offsets. This document describes the server \
            that serves it: one started with a token (--token / CODERIG_TOKEN) requires \
            `Authorization: Bearer <token>` on every route but GET /api/health, and its document \
            says so; one without serves without authentication (loopback only)."
    ),
    paths(
        routes::health::health,
        routes::agents::agents,
        routes::events::events,
        routes::openapi::openapi,
        routes::hash::xxhash32,
        routes::edit::edit,
        routes::edit::locate,
        routes::guards::check,
        routes::hashline::format,
        routes::hashline::apply,
        routes::hashline::validate,
        routes::flows::validate_flow,
        routes::battles::create_battle,
        routes::battles::list_battles,
        routes::battles::get_battle,
        routes::battles::stop_battle,
        routes::battles::analyze_battle,
        routes::battles::get_analysis,
        routes::battles::set_winner,
        routes::battles::get_diff,
        routes::battles::get_result,
        routes::battles::cross_examine,
        routes::battles::apply_battle,
        routes::battles::leaderboard,
        routes::runs::list_flows,
        routes::runs::create_run,
        routes::runs::list_runs,
        routes::runs::get_run,
        routes::runs::cancel_run,
        routes::runs::approve_step,
        routes::runs::reject_step,
    ),
    components(schemas(
        ErrorBody,
        ServerError,
        Unauthorized,
        FlowSpec,
        BattleSpec,
        BattleStarted,
        ContestantUpdated,
        BattleUpdated,
        RunUpdated,
        StepUpdated,
        AgentOutput,
        TaskRescued,
        SseGap
    ))
)]
struct ApiDoc;

/// The operations of `openapi`, mutably.
fn operations(
    openapi: &mut utoipa::openapi::OpenApi,
) -> impl Iterator<Item = &mut utoipa::openapi::path::Operation> {
    openapi.paths.paths.values_mut().flat_map(|item| {
        [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ]
        .into_iter()
        .flatten()
    })
}

/// An error response of `description` with the body of `schema`.
fn error_response(
    description: &str,
    schema: &str,
) -> utoipa::openapi::RefOr<utoipa::openapi::Response> {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name(schema)))
                .build(),
        )
        .build()
        .into()
}

/// A 500 on every operation: any route may fail to read or write the store
/// or a file (`io`), and a bug becomes a JSON `internal` (the panic
/// catcher), never a dropped connection.
struct ServerErrors;

impl Modify for ServerErrors {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let response = error_response(
            "io or internal: the server could not do its part (never the request's fault).",
            &ServerError::name(),
        );
        for operation in operations(openapi) {
            operation
                .responses
                .responses
                .insert("500".into(), response.clone());
        }
    }
}

/// A server with a token: the bearer scheme, the document-wide
/// requirement, and a 401 on every operation that requires it (those whose
/// own `security` does not lift the document's: `GET /api/health`).
struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{
            HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
        };
        openapi
            .components
            .get_or_insert_with(Default::default)
            .add_security_scheme(
                "bearer",
                SecurityScheme::Http(
                    HttpBuilder::new()
                        .scheme(HttpAuthScheme::Bearer)
                        .description(Some(
                            "The token of `coderig serve --token` / CODERIG_TOKEN, when the server has one.",
                        ))
                        .build(),
                ),
            );
        openapi.security = Some(vec![SecurityRequirement::new(
            "bearer",
            Vec::<String>::new(),
        )]);
        let unauthorized = error_response(
            "unauthorized: the server has a token and the request did not send it.",
            &Unauthorized::name(),
        );
        for operation in operations(openapi) {
            // `security: [{}]` (health): open to anyone.
            let open = operation.security.as_ref().is_some_and(|s| !s.is_empty());
            if !open {
                operation
                    .responses
                    .responses
                    .insert("401".into(), unauthorized.clone());
            }
        }
    }
}

/// The document of a server started with `config`, as JSON: the bearer
/// scheme and 401s only when it has a token.
pub fn document_for(config: &Config) -> Value {
    let mut openapi = ApiDoc::openapi();
    ServerErrors.modify(&mut openapi);
    if config.token.is_some() {
        BearerAuth.modify(&mut openapi);
    }
    let mut doc = serde_json::to_value(openapi).unwrap_or_else(|e| {
        json!({"openapi": "3.1.0", "info": {"title": "coderig", "version": env!("CARGO_PKG_VERSION"),
               "description": format!("the document could not be built: {e}")}, "paths": {}})
    });
    // Two parts utoipa 5 cannot carry: schemas with `oneOf` of objects,
    // nullable `anyOf`s or `contentSchema` (its typed Schema drops them),
    // and response links (its Link serializes `operation_id`, not the
    // spec's `operationId`). Both are added to the JSON, exactly as
    // written.
    if let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    {
        for (name, schema) in raw_schemas() {
            schemas.insert(name.into(), schema);
        }
    }
    if let Some(created) = doc.pointer_mut("/paths/~1api~1battles/post/responses/201") {
        created["links"] = battle_links();
    }
    if let Some(created) = doc.pointer_mut("/paths/~1api~1runs/post/responses/201") {
        created["links"] = run_links();
    }
    if let Some(run) = doc.pointer_mut("/paths/~1api~1runs~1{id}/get/responses/200") {
        run["links"] = step_links();
    }
    doc
}

/// The document of a server without a token ([`Config::default`]).
pub fn document() -> Value {
    document_for(&Config::default())
}

/// Links from `POST /api/runs`'s 201 to the operations on the run it
/// created (`run_id` → `{id}`). Not to approve and reject: which steps a
/// run has (and whether one waits) is not in the answer.
fn run_links() -> Value {
    let mut links = serde_json::Map::new();
    for (name, operation_id) in [("GetRun", "get_run"), ("CancelRun", "cancel_run")] {
        links.insert(
            name.into(),
            json!({"operationId": operation_id, "parameters": {"id": "$response.body#/run_id"}}),
        );
    }
    Value::Object(links)
}

/// Links from `GET /api/runs/{id}`'s 200 to approve and reject its first
/// step (`id`, `steps[0].id`): the steps of a run are known once it is
/// read (a step that is no approval waiting for a decision answers 409).
fn step_links() -> Value {
    let mut links = serde_json::Map::new();
    for (name, operation_id) in [
        ("ApproveFirstStep", "approve_step"),
        ("RejectFirstStep", "reject_step"),
    ] {
        links.insert(
            name.into(),
            json!({"operationId": operation_id, "parameters": {
                "id": "$response.body#/id", "step": "$response.body#/steps/0/id"}}),
        );
    }
    Value::Object(links)
}

/// Links from `POST /api/battles`'s 201 to the operations on the battle it
/// created (`battle_id` → `{id}`), so clients — and schemathesis' stateful
/// phase — can follow them. Not to the analysis or a contestant's diff:
/// those do not exist yet when the battle is created (a 404 until written).
fn battle_links() -> Value {
    let mut links = serde_json::Map::new();
    for (name, operation_id) in [
        ("GetBattle", "get_battle"),
        ("StopBattle", "stop_battle"),
        ("AnalyzeBattle", "analyze_battle"),
        ("SetWinner", "set_winner"),
        ("CrossExamine", "cross_examine"),
        ("ApplyBattle", "apply_battle"),
    ] {
        links.insert(
            name.into(),
            json!({"operationId": operation_id, "parameters": {"id": "$response.body#/battle_id"}}),
        );
    }
    Value::Object(links)
}
