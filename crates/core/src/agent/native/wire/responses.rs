//! OpenAI Responses with tools (pure). STUB: being written.

use crate::agent::native::{Piece, Request};
use crate::agent::AgentError;
use serde_json::{json, Value};

/// The streaming body.
pub fn request_body(req: &Request) -> Value {
    json!({"model": req.model, "stream": true})
}

/// The decoding state of one streamed response.
#[derive(Debug, Clone, Default)]
pub struct ResponsesDecoder {
    done: bool,
}

impl ResponsesDecoder {
    /// Decodes one frame.
    pub fn feed(&mut self, _event: Option<&str>, data: &str) -> Result<Vec<Piece>, AgentError> {
        if data.trim() == "[DONE]" {
            self.done = true;
        }
        Ok(vec![])
    }
    /// Whether `[DONE]` came.
    pub fn is_done(&self) -> bool {
        self.done
    }
    /// At the end of the connection.
    pub fn end(&self) -> Result<(), AgentError> {
        Ok(())
    }
}
