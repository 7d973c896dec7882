//! # coderig-scripted-model — a scripted model provider for tests
//!
//! A real HTTP/1.1 server on 127.0.0.1 that speaks the providers' wire
//! protocols well enough for real agent CLIs and coderig's own clients to run
//! end to end against it, with no network and no model:
//!
//! - OpenAI Chat Completions, `POST /v1/chat/completions` (SSE `data:` chunks,
//!   `data: [DONE]`; a JSON completion when `stream` is not true).
//! - OpenAI Responses, `POST /v1/responses` (what codex speaks; `event:` frames
//!   ending in `response.completed`).
//! - Anthropic Messages, `POST /v1/messages[?beta=true]` (what claude speaks;
//!   `message_start` … `message_stop`; errors in Anthropic's shape).
//! - `GET /v1/models`.
//!
//! **The request alone decides the reply** ([`decide::decide`]): a tool result
//! in the conversation → final text; else a known file-write or shell tool →
//! one call creating the file the prompt names ("Create <path> containing
//! <text>", default `hello.txt`/`hi`; the shell when the prompt says "using
//! the shell"); else final text (`done`, the text after `Reply with:`, or a
//! JSON instance of a requested output schema).
//!
//! **Faults are chosen by the model name**: `scripted-model+flag+flag`, see
//! [`decide::Flags`] (`reasoning_content`, `reasoning`, `timings`, `slow`,
//! `midstream_error`, `no_done`, `hang`, `status_NNN`, `usage_cached`).
//!
//! ```no_run
//! let server = coderig_scripted_model::ScriptedModelServer::start().unwrap();
//! let base = format!("{}/v1", server.base_url());
//! // ... point a client at `base`, then inspect what it sent:
//! let sent = server.requests();
//! # let _ = (base, sent);
//! ```

pub mod anthropic;
pub mod chat;
pub mod decide;
pub mod responses;
mod server;
pub mod sse;

pub use decide::Flags;
pub use server::{RecordedRequest, ScriptedModelServer};
