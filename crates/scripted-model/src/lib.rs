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
//! - Context-window endpoints, answering for the model (flags included) the
//!   client names: vLLM `GET /v1/models` (`scripted-model` and every script
//!   name, each with `"max_model_len": 32768`); llama.cpp `GET /props`
//!   (`?model=M`, `+` raw or `%2B`; `default_generation_settings.n_ctx`,
//!   `total_slots: 1`; without a model the default window); Ollama
//!   `POST /api/show {"model": M}` (`parameters` holds `num_ctx` padded as
//!   Ollama pads it, `num_ctx<spaces>W`; `model_info."llama.context_length"`
//!   is 131072, the trained length, which is *not* the window).
//!
//! **Unscripted, the request alone decides the reply** ([`decide::decide`]): a tool result
//! in the conversation → final text; else a known file-write or shell tool →
//! one call creating the file the prompt names (`Create <path> containing
//! <text>`, default `hello.txt`/`hi`; the shell when the prompt says "using
//! the shell"); else final text (`done`, the text after `Reply with:`, or a
//! JSON instance of a requested output schema). Usage is fixed: 200 prompt
//! tokens, 20 completion tokens.
//!
//! **Scripts** ([`Script`]): [`ScriptedModelServer::add_script`]`(name,
//! script)` (or `--script NAME=FILE.json`) makes a request whose model is
//! `NAME` or `NAME+flags` play the script, still statelessly: each protocol
//! module reads the conversation's earlier assistant replies
//! ([`PriorReply`]: whether it had calls, the text of what answered it) and
//! [`next_reply`] picks the step. The JSON (unknown fields are errors):
//!
//! ```json
//! {"steps": [
//!   {"think": "optional reasoning", "say": "optional text", "calls": [{"name": "list_files", "arguments": {}}]},
//!   {"calls": [{"name": "edit_file", "arguments": {"path": "a.py", "old": "x", "new": "y"}}],
//!    "on": [{"contains": "AMBIGUOUS", "then": [{"calls": [{"name": "edit_file", "arguments": {"path": "a.py", "old": "x = 1", "new": "y"}}]}]}]},
//!   {"say": "All tests pass."}
//! ]}
//! ```
//!
//! Rule: a queue starts as `steps`; each earlier assistant reply consumes its
//! front step, and when that step has `on` entries and the reply's results
//! contain an entry's `contains` (first match wins) its `then` steps go to
//! the front of the queue. The answer is the front step; an empty queue
//! answers the final text `done`. A step with `calls` answers those calls
//! (several = parallel calls in one reply) after its `say` text and `think`
//! reasoning; a step without calls is a final reply. `arguments` (default
//! `{}`) may be a JSON string, sent as that raw text (broken JSON by hand;
//! `bad_json` leaves raw text alone). A reply's results are its tool
//! results plus any user text before the next assistant reply; on
//! Responses a run of consecutive model items (message, reasoning, calls) is
//! one reply. A client that rewrites history (drops or summarises earlier
//! assistant turns) moves the script back accordingly.
//!
//! **Token estimate**: prompt tokens = ⌈bytes / 4⌉ of the system/instructions
//! text, every message's text, every earlier call's name and arguments,
//! every tool result's text, and the compact JSON text of each tool
//! definition. A scripted reply reports that as its prompt usage and
//! ⌈bytes of reasoning + text + call names and arguments / 4⌉ (at least 1)
//! as its completion usage.
//!
//! **Flags in the model name**, `name+flag+flag`, combine freely; unknown
//! flags are ignored ([`decide::Flags`]):
//!
//! | flag | effect |
//! |---|---|
//! | `reasoning_content` | Chat: reasoning under `reasoning_content` (fixed text, or the step's `think`) |
//! | `reasoning` | Chat: under `reasoning` (vLLM/Ollama); Responses: a reasoning item; Anthropic: a thinking block |
//! | `timings` | Chat: llama.cpp `timings` on the last chunk |
//! | `usage_cached` | part of the prompt (50 tokens) reported as cached |
//! | `slow` | 50 ms between SSE frames |
//! | `midstream_error` | one content frame, the protocol's error frame, close |
//! | `no_done` | no terminator (`[DONE]`, `response.completed`, `message_stop`) |
//! | `hang` | headers and one frame, then silence |
//! | `status_NNN` | HTTP NNN (400..=599) with the protocol's JSON error |
//! | `xml_calls` | no structured calls: each call in the text as Qwen3-Coder XML (`<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n…</function>\n</tool_call>`, VALUE a string as is or a JSON text), after the `say` text and a blank line; finish = stop |
//! | `hermes_calls` | no structured calls: each call as `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>` in the text; finish = stop |
//! | `split_args` | arguments streamed in pieces of 3–7 bytes (inside strings and escapes): Chat `function.arguments`, Anthropic `input_json_delta`, Responses `function_call_arguments.delta`; text-written calls' text likewise (default: two halves) |
//! | `no_ids` | calls carry no id: Chat no `id` key, Anthropic `id: ""`, Responses no `call_id` |
//! | `index_reuse` | Chat: every call of a reply streamed under `index` 0, distinct ids (Ollama). Accepted on Anthropic and Responses without effect: the quirk is Chat-only in the wild |
//! | `bad_json` | arguments with a trailing comma and no closing brace (`{"a":1,`) |
//! | `length_cut` | the reply's last call cut in the middle of its arguments (or the text, with no calls; or the last text-written call), finish = length: Chat `finish_reason: "length"`, Anthropic `stop_reason: "max_tokens"`, Responses `response.incomplete` with `incomplete_details.reason: "max_output_tokens"` (the cut item `incomplete`, without its `….done` event) |
//! | `tiny_context` | context window 2,048 tokens |
//! | `ctx_NNNN` | context window NNNN tokens |
//!
//! **The context window is always enforced** (default 32,768): a request
//! whose estimated prompt tokens exceed it gets HTTP 400 — on Chat and
//! Responses llama.cpp's `{"error":{"code":400,"message":"the request
//! exceeds the available context size, try increasing it","type":
//! "exceed_context_size_error","n_prompt_tokens":N,"n_ctx":W}}`, on Messages
//! Anthropic's `invalid_request_error` "prompt is too long: N tokens > W
//! maximum". `status_NNN` is answered before the window is checked.
//!
//! ```no_run
//! let server = coderig_scripted_model::ScriptedModelServer::start().unwrap();
//! let base = format!("{}/v1", server.base_url());
//! // ... point a client at `base`, then inspect what it sent:
//! let sent = server.requests();
//! # let _ = (base, sent);
//! ```

pub mod answer;
pub mod anthropic;
pub mod chat;
pub mod decide;
pub mod responses;
pub mod script;
mod server;
pub mod sse;

pub use decide::Flags;
pub use script::{next_reply, Branch, Call, PriorReply, Script, Step};
pub use server::{RecordedRequest, ScriptedModelServer};
