//! What a server says about its context window (pure). STUB: being written.

/// Where a context window came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowSource {
    /// The agent's config.
    Config,
    /// vLLM's `/v1/models` `max_model_len`.
    Models,
    /// llama.cpp's `/props`.
    Props,
    /// Ollama's `/api/show`.
    OllamaShow,
    /// Nothing answered: the conservative default.
    Assumed,
}
