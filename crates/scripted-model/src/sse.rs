//! Server-sent events: frame formatting and the streamed response body, with
//! the pacing and ending faults (`slow`, `hang`) applied uniformly.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::decide::Flags;

/// The pause between frames under the `slow` flag.
pub const SLOW_DELAY: Duration = Duration::from_millis(50);

/// A `data:`-only frame (Chat Completions style).
pub fn data(json: &Value) -> String {
    format!("data: {json}\n\n")
}

/// A frame with an `event:` line (Responses and Anthropic style).
pub fn event(name: &str, json: &Value) -> String {
    format!("event: {name}\ndata: {json}\n\n")
}

/// The Chat Completions terminator.
pub fn done() -> String {
    "data: [DONE]\n\n".to_string()
}

/// A scripted stream: the frames to send and how to pace and end them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Script {
    /// The frames, each a complete SSE event including its blank line.
    pub frames: Vec<String>,
    /// Pause before every frame but the first.
    pub delay: Option<Duration>,
    /// After the first frame, send nothing more and never end the body.
    pub hang: bool,
}

impl Script {
    /// A script of `frames` paced and ended as `flags` ask (`slow`, `hang`).
    pub fn new(frames: Vec<String>, flags: &Flags) -> Self {
        Script {
            frames,
            delay: flags.slow.then_some(SLOW_DELAY),
            hang: flags.hang,
        }
    }

    /// The frames actually sent before the body ends or hangs.
    pub fn sent_frames(&self) -> &[String] {
        if self.hang {
            &self.frames[..self.frames.len().min(1)]
        } else {
            &self.frames
        }
    }

    /// A `200 text/event-stream` response streaming this script. The body
    /// has no length, so HTTP/1.1 sends it chunked and the connection stays
    /// reusable after the terminating chunk.
    pub fn into_response(self) -> Response {
        let frames: Vec<Bytes> = self
            .sent_frames()
            .iter()
            .map(|f| Bytes::from(f.clone()))
            .collect();
        let delay = self.delay;
        let hang = self.hang;
        let stream = futures_util::stream::unfold(0usize, move |i| {
            let next = frames.get(i).cloned();
            async move {
                match next {
                    Some(frame) => {
                        if i > 0 {
                            if let Some(d) = delay {
                                tokio::time::sleep(d).await;
                            }
                        }
                        Some((Ok::<Bytes, Infallible>(frame), i + 1))
                    }
                    None if hang => {
                        // Silence until the connection (and this stream with it) is dropped.
                        std::future::pending::<()>().await;
                        None
                    }
                    None => None,
                }
            }
        });
        let mut response = Body::from_stream(stream).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        response
    }
}

/// A JSON error response with `status`; 429 and 503 carry `Retry-After: 1`
/// so clients that honour it retry after one second.
pub fn error_response(status: u16, body: Value) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (code, axum::Json(body)).into_response();
    if matches!(status, 429 | 503) {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

/// The OpenAI-style error body for `status`.
pub fn openai_error(status: u16, message: &str) -> Value {
    let kind = match status {
        400 | 404 | 422 => "invalid_request_error",
        401 | 403 => "authentication_error",
        429 => "rate_limit_exceeded",
        _ => "server_error",
    };
    serde_json::json!({"error": {"message": message, "type": kind, "param": null, "code": status.to_string()}})
}

/// Splits `text` into word-sized pieces (each keeps its trailing space), so
/// streamed text arrives in more than one delta when it has more than one word.
pub fn pieces(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        cur.push(c);
        if c == ' ' {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() || out.is_empty() {
        out.push(cur);
    }
    out
}

/// The `(event name, data)` of each `event:` + `data:` frame (tests of the
/// protocols that name their events).
#[cfg(test)]
pub(crate) fn named_events(frames: &[String]) -> Vec<(String, serde_json::Value)> {
    frames
        .iter()
        .map(|f| {
            let mut lines = f.lines();
            let name = lines.next().unwrap().strip_prefix("event: ").unwrap();
            let data = lines.next().unwrap().strip_prefix("data: ").unwrap();
            (name.to_string(), serde_json::from_str(data).unwrap())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_table() {
        let cases: [(&str, &[&str]); 4] = [
            ("done", &["done"]),
            ("a b c", &["a ", "b ", "c"]),
            ("", &[""]),
            ("x ", &["x "]),
        ];
        for (text, want) in cases {
            assert_eq!(pieces(text), want, "{text}");
            assert_eq!(pieces(text).concat(), text);
        }
    }

    #[test]
    fn hang_sends_only_the_first_frame() {
        let frames = vec!["a".to_string(), "b".to_string()];
        let flags = Flags {
            hang: true,
            ..Flags::default()
        };
        assert_eq!(
            Script::new(frames.clone(), &flags).sent_frames(),
            &frames[..1]
        );
        assert_eq!(
            Script::new(frames.clone(), &Flags::default()).sent_frames(),
            &frames[..]
        );
    }
}
