//! What a server says about its context window (pure): the answers of
//! vLLM's `/v1/models`, llama.cpp's `/props` and Ollama's `/api/show`
//! read into a window in tokens. The agent makes the requests; these
//! functions only read the bodies, and never fail: a body they cannot read
//! is `None`, and the agent tries the next source or assumes
//! [`ASSUMED_WINDOW`].

use serde_json::{json, Value};

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

/// The window assumed when no server answered and the config says none:
/// small enough that any server coderig meets runs at least this.
pub const ASSUMED_WINDOW: u32 = 8192;

/// The context Ollama runs a model with when neither the model's
/// parameters nor the request set `num_ctx`: the smallest of its server
/// defaults (4096 below 24 GiB of VRAM; more on larger GPUs or with
/// `OLLAMA_CONTEXT_LENGTH`, which `/api/show` does not tell).
pub const OLLAMA_DEFAULT_NUM_CTX: u32 = 4096;

/// The server's root URL under an OpenAI-style base URL: `base_url`
/// without trailing `/`s and without a trailing `/v1` segment
/// (`http://h:8000/v1/` → `http://h:8000`), where `/props`, `/api/show`
/// and `/v1/models` are found.
pub fn server_root(base_url: &str) -> String {
    let url = base_url.trim_end_matches('/');
    url.strip_suffix("/v1")
        .unwrap_or(url)
        .trim_end_matches('/')
        .to_string()
}

/// The window of `model` in vLLM's `/v1/models` answer (`{"data": [{"id",
/// "max_model_len"}]}`): the `max_model_len` of the entry whose `id` is
/// `model`; `None` when there is no such entry or no positive length.
pub fn from_models(body: &str, model: &str) -> Option<u32> {
    let v: Value = serde_json::from_str(body).ok()?;
    v.get("data")?
        .as_array()?
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
        .and_then(|m| window(m.get("max_model_len")))
}

/// The window in llama.cpp's `GET /props` answer: its
/// `default_generation_settings.n_ctx`, else a top-level `n_ctx` (older
/// builds); `None` when neither is a positive count. With several slots,
/// `n_ctx` is already the context of one slot, which is what one request
/// gets.
pub fn from_props(body: &str) -> Option<u32> {
    let v: Value = serde_json::from_str(body).ok()?;
    window(v.pointer("/default_generation_settings/n_ctx")).or_else(|| window(v.get("n_ctx")))
}

/// The body of Ollama's `POST /api/show` for `model`.
pub fn ollama_show_body(model: &str) -> Value {
    json!({"model": model})
}

/// The window Ollama runs the model with, from its `POST /api/show`
/// answer (`{"parameters": "...", "model_info": {...}, ...}`).
///
/// The `num_ctx` of the `parameters` text (one `name value` per line, set
/// by the Modelfile) when there is one. Otherwise Ollama runs the model
/// with its server default — *not* the model's trained length that
/// `model_info.<arch>.context_length` reports — and silently drops the
/// start of a longer prompt; so the window is
/// min(`context_length`, [`OLLAMA_DEFAULT_NUM_CTX`]), the default when the
/// length is missing. A larger default (big GPUs, `OLLAMA_CONTEXT_LENGTH`)
/// is not visible here, so this errs small: an agent that believes the
/// window smaller than it is only summarises early, while one that
/// believes it larger loses the task from its own prompt. `None` when the
/// body is not a JSON object or is an `{"error": ...}`.
pub fn from_ollama_show(body: &str) -> Option<u32> {
    let v: Value = serde_json::from_str(body).ok()?;
    if !v.is_object() || v.get("error").is_some_and(|e| !e.is_null()) {
        return None;
    }
    let parameters = v.get("parameters").and_then(Value::as_str).unwrap_or("");
    let num_ctx = parameters.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some("num_ctx"))
            .then(|| words.next()?.parse::<u32>().ok())
            .flatten()
            .filter(|n| *n > 0)
    });
    if num_ctx.is_some() {
        return num_ctx;
    }
    let info = v.get("model_info");
    let arch = info
        .and_then(|i| i.get("general.architecture"))
        .and_then(Value::as_str);
    let trained = arch
        .and_then(|a| window(info.and_then(|i| i.get(format!("{a}.context_length")))))
        .or_else(|| {
            let map = info.and_then(Value::as_object)?;
            map.iter()
                .filter(|(k, _)| k.ends_with(".context_length"))
                .find_map(|(_, n)| window(Some(n)))
        });
    Some(trained.map_or(OLLAMA_DEFAULT_NUM_CTX, |n| n.min(OLLAMA_DEFAULT_NUM_CTX)))
}

/// A positive token count that fits a `u32`.
fn window(v: Option<&Value>) -> Option<u32> {
    v.and_then(Value::as_u64)
        .filter(|n| *n > 0)
        .and_then(|n| u32::try_from(n).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_root_strips_slashes_and_v1() {
        let cases = [
            ("http://h:8000/v1", "http://h:8000"),
            ("http://h:8000/v1/", "http://h:8000"),
            ("http://h:11434", "http://h:11434"),
            ("http://h:11434//", "http://h:11434"),
            ("http://h/proxy/v1", "http://h/proxy"),
            ("http://h/apiv1", "http://h/apiv1"),
            ("http://h/v1/v1", "http://h/v1"),
            ("", ""),
        ];
        for (base, want) in cases {
            assert_eq!(server_root(base), want, "{base}");
        }
    }

    #[test]
    fn vllm_models() {
        let body = r#"{"object":"list","data":[
            {"id":"other","object":"model","max_model_len":4096},
            {"id":"Qwen/Qwen3-Coder-30B","object":"model","created":1,"owned_by":"vllm","root":"Qwen/Qwen3-Coder-30B","parent":null,"max_model_len":65536,"permission":[]}
        ]}"#;
        let cases = [
            (body, "Qwen/Qwen3-Coder-30B", Some(65536)),
            (body, "other", Some(4096)),
            (body, "missing", None),
            (r#"{"data":[{"id":"m"}]}"#, "m", None),
            (r#"{"data":[{"id":"m","max_model_len":0}]}"#, "m", None),
            (
                r#"{"data":[{"id":"m","max_model_len":99999999999}]}"#,
                "m",
                None,
            ),
            (r#"{"data":{"id":"m"}}"#, "m", None),
            ("not json", "m", None),
        ];
        for (body, model, want) in cases {
            assert_eq!(from_models(body, model), want, "{model} {body}");
        }
    }

    #[test]
    fn llama_cpp_props() {
        let cases = [
            (
                r#"{"default_generation_settings":{"id":0,"id_task":-1,"n_ctx":65536,"speculative":false,"is_processing":false,"params":{"n_predict":-1,"temperature":0.8}},"total_slots":4,"model_path":"/m/qwen.gguf","chat_template":"...","modalities":{"vision":false},"build_info":"b6000"}"#,
                Some(65536),
            ),
            (r#"{"n_ctx":2048,"total_slots":1}"#, Some(2048)),
            (
                r#"{"default_generation_settings":{"n_ctx":0},"n_ctx":4096}"#,
                Some(4096),
            ),
            (r#"{"default_generation_settings":{}}"#, None),
            (r#"{"error":{"code":404,"message":"File Not Found"}}"#, None),
            ("", None),
        ];
        for (body, want) in cases {
            assert_eq!(from_props(body), want, "{body}");
        }
    }

    #[test]
    fn ollama_show() {
        assert_eq!(ollama_show_body("qwen3:8b"), json!({"model": "qwen3:8b"}));
        let info = r#""model_info":{"general.architecture":"qwen3","general.parameter_count":8190735360,"qwen3.context_length":40960,"qwen3.embedding_length":4096}"#;
        let show = |parameters: &str| {
            format!(
                r#"{{"license":"...","modelfile":"FROM x","parameters":{parameters},"template":"...","details":{{"format":"gguf","family":"qwen3"}},{info},"capabilities":["completion","tools"]}}"#
            )
        };
        let cases = [
            (
                show(r#""num_ctx                        16384\nstop                           \"<|im_end|>\"""#),
                Some(16384),
            ),
            (
                show(r#""temperature                    0.6\nstop                           \"<|im_end|>\"""#),
                Some(4096),
            ),
            (show(r#""num_ctx bad""#), Some(4096)),
            (
                r#"{"parameters":"","model_info":{"general.architecture":"llama","llama.context_length":2048}}"#.to_string(),
                Some(2048),
            ),
            (
                r#"{"model_info":{"general.architecture":"x","gemma3.context_length":131072}}"#.to_string(),
                Some(4096),
            ),
            (r#"{"details":{}}"#.to_string(), Some(4096)),
            (r#"{"error":"model 'x' not found"}"#.to_string(), None),
            ("[]".to_string(), None),
            ("garbage".to_string(), None),
        ];
        for (body, want) in cases {
            assert_eq!(from_ollama_show(&body), want, "{body}");
        }
    }
}
