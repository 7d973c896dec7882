//! The `openai` agent over real HTTP on loopback, against the project's
//! scripted model server (crate `coderig-scripted-model`): every fault is
//! chosen by the model name (`scripted-model+flag`).

use coderig::agent::{
    Agent, AgentError, AgentErrorKind, AgentEvent, OpenAiAgent, OpenAiConfig, Turn, TurnOutcome,
    Usage,
};
use coderig::model::ErrorClass;
use coderig_scripted_model::ScriptedModelServer;
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn agent_for(server: &ScriptedModelServer) -> OpenAiAgent {
    OpenAiAgent::new(OpenAiConfig::new(format!("{}/v1", server.base_url()))).unwrap()
}

async fn run_with(
    agent: &OpenAiAgent,
    turn: Turn,
    cancel: CancellationToken,
) -> (Result<TurnOutcome, AgentError>, Vec<AgentEvent>) {
    let (tx, mut rx) = mpsc::channel(1024);
    let result = agent.run(turn, tx, cancel).await;
    let mut events = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        events.push(ev);
    }
    (result, events)
}

async fn run(
    agent: &OpenAiAgent,
    turn: Turn,
) -> (Result<TurnOutcome, AgentError>, Vec<AgentEvent>) {
    run_with(agent, turn, CancellationToken::new()).await
}

fn texts(events: &[AgentEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn reasoning(events: &[AgentEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ReasoningDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn usages(events: &[AgentEvent]) -> Vec<Usage> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Usage(u) => Some(*u),
            _ => None,
        })
        .collect()
}

fn usage(input: u64, output: u64, cache_read: u64) -> Usage {
    Usage {
        input,
        output,
        cache_read,
        ..Usage::default()
    }
}

#[tokio::test]
async fn a_text_turn_streams_text_usage_and_finish() {
    let server = ScriptedModelServer::start().unwrap();
    let mut config = OpenAiConfig::new(format!("{}/v1/", server.base_url())).api_key("sk-test");
    config.headers.insert("X-Title".into(), "coderig".into());
    let agent = OpenAiAgent::new(config).unwrap();
    let mut turn = Turn::new("Reply with: hello there world").model("scripted-model");
    turn.system = Some("Be brief.".into());

    let (result, events) = run(&agent, turn).await;
    let out = result.unwrap();

    assert_eq!(texts(&events), "hello there world");
    assert!(
        events
            .iter()
            .filter(|e| matches!(e, AgentEvent::TextDelta { .. }))
            .count()
            > 1,
        "streamed in pieces: {events:?}"
    );
    assert_eq!(usages(&events), vec![usage(200, 20, 0)]);
    assert_eq!(
        events.last(),
        Some(&AgentEvent::Finished {
            stop_reason: Some("stop".into()),
            final_text: None,
            num_turns: None
        })
    );
    assert_eq!(out.final_text, "hello there world");
    assert_eq!(out.usage, usage(200, 20, 0));
    assert_eq!(out.stop_reason.as_deref(), Some("stop"));
    assert_eq!(out.model.as_deref(), Some("scripted-model"));
    assert!(out.ttft_ms.is_some());
    assert!(out.ttft_ms.unwrap() <= out.duration_ms);
    assert_eq!(out.exit_code, None);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let req = &reqs[0];
    assert_eq!(
        (req.method.as_str(), req.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(req.body["stream"], json!(true));
    assert_eq!(req.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        req.body["messages"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Reply with: hello there world"}
        ])
    );
    assert_eq!(
        req.headers.get("authorization").map(String::as_str),
        Some("Bearer sk-test")
    );
    assert_eq!(
        req.headers.get("x-title").map(String::as_str),
        Some("coderig")
    );
}

#[tokio::test]
async fn the_model_comes_from_the_turn_else_the_config_else_it_is_a_config_error() {
    let server = ScriptedModelServer::start().unwrap();
    let base = format!("{}/v1", server.base_url());
    let mut config = OpenAiConfig::new(&base).model("default-model");
    config.extra_body.insert("temperature".into(), json!(0));
    let agent = OpenAiAgent::new(config).unwrap();
    let (result, _) = run(&agent, Turn::new("hi")).await;
    assert_eq!(result.unwrap().final_text, "done");
    let (result, _) = run(&agent, Turn::new("hi").model("turn-model")).await;
    result.unwrap();
    let reqs = server.requests();
    assert_eq!(reqs[0].body["model"], json!("default-model"));
    assert_eq!(reqs[0].body["temperature"], json!(0));
    assert_eq!(reqs[1].body["model"], json!("turn-model"));
    assert!(!reqs[0].headers.contains_key("authorization"));

    let agent = OpenAiAgent::new(OpenAiConfig::new(&base)).unwrap();
    let (result, events) = run(&agent, Turn::new("hi")).await;
    let e = result.unwrap_err();
    assert_eq!(e.kind, AgentErrorKind::Spawn);
    assert_eq!(e.class, ErrorClass::Fatal);
    assert!(events.is_empty());
    assert_eq!(server.requests().len(), 2, "nothing was sent");
}

#[tokio::test]
async fn cached_tokens_are_not_input() {
    let server = ScriptedModelServer::start().unwrap();
    let (result, events) = run(&agent_for(&server), Turn::new("hi").model("m+usage_cached")).await;
    assert_eq!(usages(&events), vec![usage(150, 20, 50)]);
    assert_eq!(result.unwrap().usage, usage(150, 20, 50));
}

#[tokio::test]
async fn both_reasoning_fields_are_reasoning() {
    let server = ScriptedModelServer::start().unwrap();
    let agent = agent_for(&server);
    for flag in ["reasoning_content", "reasoning"] {
        let (result, events) = run(
            &agent,
            Turn::new("Reply with: ok").model(format!("m+{flag}")),
        )
        .await;
        let out = result.unwrap();
        assert_eq!(reasoning(&events), "Thinking about the request.", "{flag}");
        assert_eq!(out.final_text, "ok", "{flag}");
        let first = events
            .iter()
            .position(|e| matches!(e, AgentEvent::ReasoningDelta { .. }));
        let text = events
            .iter()
            .position(|e| matches!(e, AgentEvent::TextDelta { .. }));
        assert!(first < text, "{flag}: reasoning streams first");
    }
}

#[tokio::test]
async fn timings_give_the_generation_time_else_it_is_measured() {
    let server = ScriptedModelServer::start().unwrap();
    let agent = agent_for(&server);
    let (result, _) = run(&agent, Turn::new("hi").model("m+timings")).await;
    let out = result.unwrap();
    assert_eq!(out.generation_ms, Some(200), "llama.cpp predicted_ms");
    assert_eq!(out.tokens_per_sec(), Some(100.0));

    // `slow`: 50 ms between chunks, so first-to-last delta is measurable.
    let (result, _) = run(&agent, Turn::new("Reply with: a b c").model("m+slow")).await;
    let out = result.unwrap();
    let measured = out.generation_ms.expect("measured");
    assert!(measured >= 50, "{measured}");
    assert!(out.ttft_ms.unwrap() + measured <= out.duration_ms);
}

#[tokio::test]
async fn a_midstream_error_keeps_the_text_before_it() {
    let server = ScriptedModelServer::start().unwrap();
    let (result, events) = run(
        &agent_for(&server),
        Turn::new("Reply with: partial answer").model("m+midstream_error"),
    )
    .await;
    let e = result.unwrap_err();
    assert_eq!(e.kind, AgentErrorKind::Provider);
    assert_eq!(e.class, ErrorClass::Retry, "server_error / code 500");
    assert!(
        e.message.contains("scripted midstream error"),
        "{}",
        e.message
    );
    assert_eq!(texts(&events), "partial ");
    assert!(matches!(
        events.last(),
        Some(AgentEvent::Error {
            class: ErrorClass::Retry,
            ..
        })
    ));
}

#[tokio::test]
async fn a_stream_without_done_is_a_protocol_error() {
    let server = ScriptedModelServer::start().unwrap();
    let (result, events) = run(
        &agent_for(&server),
        Turn::new("Reply with: cut").model("m+no_done"),
    )
    .await;
    let e = result.unwrap_err();
    assert_eq!(e.kind, AgentErrorKind::Protocol);
    assert_eq!(e.message, "stream ended without [DONE]");
    assert_eq!(e.class, ErrorClass::Retry);
    assert_eq!(texts(&events), "cut");
    assert!(!events
        .iter()
        .any(|e| matches!(e, AgentEvent::Finished { .. })));
}

#[tokio::test]
async fn http_statuses_are_classified_provider_errors() {
    let server = ScriptedModelServer::start().unwrap();
    let agent = agent_for(&server);
    let cases = [
        (429, ErrorClass::Retry, Some(1000)),
        (503, ErrorClass::Retry, Some(1000)),
        (500, ErrorClass::Retry, None),
        (400, ErrorClass::Fatal, None),
        (401, ErrorClass::Fatal, None),
        (404, ErrorClass::Fallback, None),
    ];
    for (status, class, retry_after_ms) in cases {
        let (result, events) =
            run(&agent, Turn::new("hi").model(format!("m+status_{status}"))).await;
        let e = result.unwrap_err();
        assert_eq!(e.kind, AgentErrorKind::Provider, "{status}");
        assert_eq!(e.class, class, "{status}: {}", e.message);
        assert_eq!(e.http_status, Some(status));
        assert_eq!(e.retry_after_ms, retry_after_ms, "{status}");
        assert!(
            e.message.contains(&format!("scripted status {status}")),
            "{}",
            e.message
        );
        assert_eq!(
            events,
            vec![AgentEvent::Error {
                message: e.message.clone(),
                class,
                http_status: Some(status)
            }]
        );
    }
}

#[tokio::test]
async fn a_hung_stream_is_idle_after_the_idle_timeout() {
    let server = ScriptedModelServer::start().unwrap();
    let agent = agent_for(&server);
    let started = Instant::now();
    let turn = Turn::new("hi")
        .model("m+hang")
        .idle_timeout(Duration::from_millis(300));
    let (result, events) = run(&agent, turn).await;
    let e = result.unwrap_err();
    assert_eq!(e.kind, AgentErrorKind::Idle, "{e}");
    assert_eq!(e.class, ErrorClass::Retry);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert_eq!(
        texts(&events),
        "done",
        "the chunk before the hang was streamed"
    );

    // The config's idle limit applies to turns that set none.
    let config = OpenAiConfig::new(format!("{}/v1", server.base_url()))
        .idle_timeout(Duration::from_millis(200));
    let (result, _) = run(
        &OpenAiAgent::new(config).unwrap(),
        Turn::new("hi").model("m+hang"),
    )
    .await;
    assert_eq!(result.unwrap_err().kind, AgentErrorKind::Idle);
}

#[tokio::test]
async fn a_hung_stream_times_out() {
    let server = ScriptedModelServer::start().unwrap();
    let started = Instant::now();
    let turn = Turn::new("hi")
        .model("m+hang")
        .timeout(Duration::from_millis(400));
    let (result, _) = run(&agent_for(&server), turn).await;
    let e = result.unwrap_err();
    assert_eq!(e.kind, AgentErrorKind::Timeout, "{e}");
    assert_eq!(e.class, ErrorClass::Retry);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(400) && took < Duration::from_secs(5),
        "{took:?}"
    );
}

#[tokio::test]
async fn cancelling_ends_the_turn_promptly() {
    let server = ScriptedModelServer::start().unwrap();
    let agent = agent_for(&server);
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        c.cancel();
    });
    let started = Instant::now();
    let (result, _) = run_with(&agent, Turn::new("hi").model("m+hang"), cancel).await;
    let e = result.unwrap_err();
    assert_eq!(e.kind, AgentErrorKind::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(3));

    // Cancelled before it starts: nothing is sent.
    let cancel = CancellationToken::new();
    cancel.cancel();
    let before = server.requests().len();
    let (result, _) = run_with(&agent, Turn::new("hi").model("m"), cancel).await;
    assert_eq!(result.unwrap_err().kind, AgentErrorKind::Cancelled);
    assert_eq!(server.requests().len(), before);
}

#[tokio::test]
async fn a_closed_event_receiver_does_not_stop_the_turn() {
    let server = ScriptedModelServer::start().unwrap();
    let (tx, rx) = mpsc::channel(1);
    drop(rx);
    let out = agent_for(&server)
        .run(
            Turn::new("Reply with: still here").model("m"),
            tx,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.final_text, "still here");
    assert_eq!(out.usage, usage(200, 20, 0));
}

#[tokio::test]
async fn tool_calls_are_reported_not_run() {
    let server = ScriptedModelServer::start().unwrap();
    let mut config = OpenAiConfig::new(format!("{}/v1", server.base_url()));
    // The agent offers no tools itself; a config may pass them through.
    config.extra_body.insert(
        "tools".into(),
        json!([{"type": "function", "function": {"name": "write_file", "parameters": {
            "type": "object",
            "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["file_path", "content"]
        }}}]),
    );
    let agent = OpenAiAgent::new(config).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let turn = Turn::new("Create a.txt containing yo")
        .model("m")
        .workdir(dir.path());
    let (result, events) = run(&agent, turn).await;
    let out = result.unwrap();
    let calls: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCall { id, name, input } => Some((id, name, input)),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 1, "{events:?}");
    let (id, name, input) = calls[0];
    assert!(id.starts_with("call_"), "{id}");
    assert_eq!(name, "write_file");
    assert_eq!(input["content"], json!("yo\n"), "{input}");
    assert!(
        input["file_path"].as_str().unwrap().ends_with("a.txt"),
        "{input}"
    );
    assert_eq!(out.stop_reason.as_deref(), Some("tool_calls"));
    assert!(!events
        .iter()
        .any(|e| matches!(e, AgentEvent::ToolResult { .. })));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no tool ran"
    );
}

#[tokio::test]
async fn models_lists_the_served_models() {
    let server = ScriptedModelServer::start().unwrap();
    let models = agent_for(&server).models().await.unwrap();
    assert_eq!(models, vec!["scripted-model".to_string()]);
    let req = server.requests().pop().unwrap();
    assert_eq!(
        (req.method.as_str(), req.path.as_str()),
        ("GET", "/v1/models")
    );
}

#[tokio::test]
async fn a_closed_port_is_a_retryable_provider_error() {
    // A port that was just free: bind, note it, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let agent =
        OpenAiAgent::new(OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1")).model("m"))
            .unwrap();
    let (result, events) = run(&agent, Turn::new("hi")).await;
    let e = result.unwrap_err();
    assert_eq!(e.kind, AgentErrorKind::Provider, "{e}");
    assert_eq!(e.class, ErrorClass::Retry);
    assert_eq!(e.http_status, None);
    assert!(e.message.contains("cannot reach"), "{}", e.message);
    assert!(events.is_empty());

    let e = agent.models().await.unwrap_err();
    assert_eq!(
        (e.kind, e.class),
        (AgentErrorKind::Provider, ErrorClass::Retry)
    );
}

#[tokio::test]
async fn models_errors_carry_the_status() {
    // The server's unknown routes answer 404 with an OpenAI-style body.
    let server = ScriptedModelServer::start().unwrap();
    let agent = OpenAiAgent::new(OpenAiConfig::new(format!("{}/nope", server.base_url()))).unwrap();
    let e = agent.models().await.unwrap_err();
    assert_eq!(e.kind, AgentErrorKind::Provider);
    assert_eq!(e.http_status, Some(404));
}

#[tokio::test]
async fn a_coderig_toml_openai_agent_runs_through_the_registry() {
    let server = ScriptedModelServer::start().unwrap();
    let toml = format!(
        "[agents.local]\nkind = \"openai\"\nbase_url = \"{}/v1\"\nmodel = \"scripted-model\"\nlane = \"local\"\n\
         idle_timeout = \"5s\"\nheaders = {{ X-Rig = \"yes\" }}\n",
        server.base_url()
    );
    let registry = coderig::agent::Registry::from_toml_str(&toml).unwrap();
    let mut handle = registry
        .start_turn("local", Turn::new("Reply with: via toml"))
        .unwrap();
    let out = handle.wait().await.unwrap();
    assert_eq!(out.final_text, "via toml");
    let req = server.requests().pop().unwrap();
    assert_eq!(req.headers.get("x-rig").map(String::as_str), Some("yes"));

    let info = registry.info(Duration::from_secs(5)).await;
    assert_eq!(info.len(), 1);
    assert_eq!(info[0].reachable, Some(true), "{:?}", info[0].error);
    assert_eq!(info[0].models, vec!["scripted-model".to_string()]);
}
