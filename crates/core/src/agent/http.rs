//! What the HTTP agents (`openai`, `native`) share (feature `http`): the
//! client and its headers, the API key, a connection failure as a typed
//! error, and the idle and wall-clock limits around every await.

use super::{AgentError, AgentErrorKind};
use crate::model::classify_error;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, Instant};

/// How much of an error response body is read: enough for any JSON
/// error, bounded against a server that streams garbage.
pub(crate) const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// How long `models()` waits when the config sets no timeout.
pub(crate) const MODELS_TIMEOUT: Duration = Duration::from_secs(30);

/// The configured headers as a `HeaderMap`; a bad name or value is a
/// `Spawn` error naming the header.
pub(crate) fn header_map(headers: &BTreeMap<String, String>) -> Result<HeaderMap, AgentError> {
    let bad = |m: String| AgentError::new(AgentErrorKind::Spawn, m);
    let mut map = HeaderMap::new();
    for (k, v) in headers {
        let name = HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| bad(format!("invalid header name {k:?}")))?;
        let value =
            HeaderValue::from_str(v).map_err(|_| bad(format!("invalid value for header {k:?}")))?;
        map.insert(name, value);
    }
    Ok(map)
}

/// The HTTP client. reqwest is built without a bundled crypto provider
/// (see Cargo.toml): ring is installed as the process default unless the
/// application installed its own.
pub(crate) fn client() -> Result<reqwest::Client, AgentError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().build().map_err(|e| {
        AgentError::new(
            AgentErrorKind::Spawn,
            format!("cannot build the HTTP client: {e}"),
        )
    })
}

/// The API key: `key` as given, else the variable `env` names, read now
/// (a variable that is not set is a `Spawn` error, not an anonymous
/// request), else none.
pub(crate) fn api_key(key: Option<&str>, env: Option<&str>) -> Result<Option<String>, AgentError> {
    if let Some(k) = key {
        return Ok(Some(k.to_string()));
    }
    match env {
        None => Ok(None),
        Some(var) => std::env::var(var).map(Some).map_err(|_| {
            AgentError::new(
                AgentErrorKind::Spawn,
                format!("the API key variable {var} is not set"),
            )
        }),
    }
}

/// A request to `base` that never got an answer: a `Provider` error of
/// the class `classify_error` gives a connection failure (`retry`: the
/// server may be restarting).
pub(crate) fn connection_error(base: &str, e: &reqwest::Error) -> AgentError {
    let message = format!("cannot reach {base}: {}", error_chain(e));
    AgentError {
        class: classify_error(Some("APIConnectionError"), Some(&message), None),
        ..AgentError::new(AgentErrorKind::Provider, message)
    }
}

/// Runs `fut` within the idle limit, if any.
pub(crate) async fn within<T>(
    idle: Option<Duration>,
    fut: impl Future<Output = T>,
) -> Result<T, AgentError> {
    match idle {
        None => Ok(fut.await),
        Some(d) => tokio::time::timeout(d, fut).await.map_err(|_| {
            AgentError::new(
                AgentErrorKind::Idle,
                format!("no data from the server for {} ms", d.as_millis()),
            )
        }),
    }
}

/// Runs `fut` within the wall-clock limit, if any.
pub(crate) async fn with_deadline<T>(
    limit: Option<Duration>,
    fut: impl Future<Output = Result<T, AgentError>>,
) -> Result<T, AgentError> {
    match limit {
        None => fut.await,
        Some(d) => tokio::time::timeout(d, fut).await.unwrap_or_else(|_| {
            Err(AgentError::new(
                AgentErrorKind::Timeout,
                format!("turn timed out after {} ms", d.as_millis()),
            ))
        }),
    }
}

/// Reads at most [`ERROR_BODY_LIMIT`] bytes of the body as text; a body
/// cut by a dropped connection is what was read so far.
pub(crate) async fn read_bounded(
    resp: &mut reqwest::Response,
    idle: Option<Duration>,
) -> Result<String, AgentError> {
    let mut buf = Vec::new();
    while buf.len() < ERROR_BODY_LIMIT {
        match within(idle, resp.chunk()).await? {
            Ok(Some(b)) => buf.extend_from_slice(&b[..b.len().min(ERROR_BODY_LIMIT - buf.len())]),
            Ok(None) | Err(_) => break,
        }
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The error with its sources (`error sending request: ... Connection
/// refused`): reqwest's top-level message alone hides the cause.
pub(crate) fn error_chain(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let c = cause.to_string();
        if !s.contains(&c) {
            s.push_str(": ");
            s.push_str(&c);
        }
        source = cause.source();
    }
    s
}

/// Milliseconds since `start`.
pub(crate) fn elapsed_ms(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}
