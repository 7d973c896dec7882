//! The three wire APIs (pure): a [`Request`] to a streaming request body,
//! the streamed SSE frames to [`Piece`]s, error bodies to [`AgentError`]s,
//! and the servers' answers about their context window ([`probe`]).
//!
//! The HTTP half (the agent) frames the stream with
//! [`crate::agent::openai_sse::SseDecoder`] and hands each frame's `event`
//! name and `data` to [`WireStream::feed`].

pub mod anthropic;
pub mod chat;
pub mod probe;
pub mod responses;

use super::{Api, Piece, Request};
use crate::agent::AgentError;
use serde_json::Value;
use std::time::SystemTime;

/// The path of the streaming endpoint under the base URL.
pub fn path(api: Api) -> &'static str {
    match api {
        Api::Chat => "/chat/completions",
        Api::Anthropic => "/messages",
        Api::Responses => "/responses",
    }
}

/// The streaming request body of `req` for `api`.
pub fn request_body(api: Api, req: &Request) -> Value {
    match api {
        Api::Chat => chat::request_body(req),
        Api::Anthropic => anthropic::request_body(req),
        Api::Responses => responses::request_body(req),
    }
}

/// The pieces of a whole (non-streamed) reply `body` to a streaming
/// request — what some servers (Ollama with tools) answer — in the order a
/// stream would give them, ending with exactly one [`Piece::Finish`]. An
/// error body is a classified `Provider` error, any other body that is not
/// the API's reply a `Protocol` error.
pub fn decode_whole(api: Api, body: &str) -> Result<Vec<Piece>, AgentError> {
    match api {
        Api::Chat => chat::whole(body),
        Api::Anthropic => anthropic::whole(body),
        Api::Responses => responses::whole(body),
    }
}

/// The error of a response with HTTP `status` and `body` (and the
/// `Retry-After` header, read against `now`), in the API's error shape.
pub fn status_error(
    api: Api,
    status: u16,
    body: &str,
    retry_after: Option<&str>,
    now: SystemTime,
) -> AgentError {
    match api {
        Api::Chat | Api::Responses => {
            crate::agent::openai_chunk::status_error(status, body, retry_after, now)
        }
        Api::Anthropic => anthropic::status_error(status, body, retry_after, now),
    }
}

/// The decoding state of one streamed reply.
#[derive(Debug, Clone)]
pub enum WireStream {
    /// Chat Completions.
    Chat(chat::ChatDecoder),
    /// Anthropic Messages.
    Anthropic(anthropic::AnthropicDecoder),
    /// OpenAI Responses.
    Responses(responses::ResponsesDecoder),
}

impl WireStream {
    /// A decoder for `api` before its first frame.
    pub fn new(api: Api) -> Self {
        match api {
            Api::Chat => WireStream::Chat(chat::ChatDecoder::default()),
            Api::Anthropic => WireStream::Anthropic(anthropic::AnthropicDecoder::default()),
            Api::Responses => WireStream::Responses(responses::ResponsesDecoder::default()),
        }
    }

    /// Decodes one SSE frame (`event` name where the frame had one, and its
    /// `data`). An error frame is a classified `Provider` error; a frame
    /// that is not JSON is a `Protocol` error.
    pub fn feed(&mut self, event: Option<&str>, data: &str) -> Result<Vec<Piece>, AgentError> {
        match self {
            WireStream::Chat(d) => d.feed(event, data),
            WireStream::Anthropic(d) => d.feed(event, data),
            WireStream::Responses(d) => d.feed(event, data),
        }
    }

    /// Whether the API's terminator came (`[DONE]`, `message_stop`,
    /// `response.completed` / `response.incomplete`).
    pub fn is_done(&self) -> bool {
        match self {
            WireStream::Chat(d) => d.is_done(),
            WireStream::Anthropic(d) => d.is_done(),
            WireStream::Responses(d) => d.is_done(),
        }
    }

    /// Called when the connection closed: a `Protocol` error when the
    /// terminator never came.
    pub fn end(&self) -> Result<(), AgentError> {
        match self {
            WireStream::Chat(d) => d.end(),
            WireStream::Anthropic(d) => d.end(),
            WireStream::Responses(d) => d.end(),
        }
    }
}
