//! `classify_error` against tables: every difference from the seed's
//! `isRetryableModelError` (what the seed said, what we say, and why), the
//! cases where we agree with it, and real provider errors.

use coderig::model::{
    classify_error, classify_status, explain_error, parse_retry_after, ErrorClass, Evidence,
};
use std::time::{Duration, UNIX_EPOCH};

use ErrorClass::{Fallback, Fatal, Retry, Stop};

/// The seed's `isRetryableModelError`, reduced to the rules SEED-RUNTIME
/// 7.4 documents: the three name sets in full, the status set, the
/// provider auto-retry signal, and the patterns it names (the stop patterns
/// stand in for the 29 it summarizes as "quota, billing, credit and monthly
/// limits"). `true` meant "switch to the next model"; `false` meant stop
/// *or* fatal, undistinguished. Substrings, no word boundaries.
fn seed(name: &str, message: &str, status: Option<u16>) -> bool {
    let name = name.to_lowercase();
    if [
        "messageabortederror",
        "permissiondeniederror",
        "contextlengtherror",
        "timeouterror",
        "validationerror",
        "syntaxerror",
        "usererror",
    ]
    .contains(&name.as_str())
    {
        return false;
    }
    if [
        "quotaexceedederror",
        "insufficientcreditserror",
        "freeusagelimiterror",
    ]
    .contains(&name.as_str())
    {
        return false;
    }
    if [
        "providermodelnotfounderror",
        "ratelimiterror",
        "modelunavailableerror",
        "providerconnectionerror",
        "authenticationerror",
    ]
    .contains(&name.as_str())
    {
        return true;
    }
    let m = message.to_lowercase();
    if [
        "quota",
        "billing",
        "monthly limit",
        "exhausted your capacity",
    ]
    .iter()
    .any(|p| m.contains(p))
    {
        return false;
    }
    if m.contains("retrying in")
        && ["rate limit", "cooling down", "credentials for model"]
            .iter()
            .any(|p| m.contains(p))
    {
        return true;
    }
    if matches!(status, Some(429 | 503 | 529)) {
        return true;
    }
    [
        "rate limit",
        "not found",
        "unavailable",
        "timeout",
        "bad request",
        "502",
        "503",
        "504",
        "429",
        "529",
        "overloaded",
        "try again",
    ]
    .iter()
    .any(|p| m.contains(p))
}

/// What the seed's bool meant for a fallback chain.
fn seed_meant(retryable: bool) -> &'static str {
    if retryable {
        "true: next model"
    } else {
        "false: stop or fatal"
    }
}

/// Whether our class changes what the caller does compared with the seed.
/// `false` → `stop` is listed too: the seed's `false` could not tell the
/// chain whether another model might work.
fn differs(retryable: bool, ours: ErrorClass) -> bool {
    if retryable {
        ours != Fallback
    } else {
        ours != Fatal
    }
}

type Row = (
    &'static str,
    &'static str,
    Option<u16>,
    bool,
    ErrorClass,
    &'static str,
);

/// (name, message, status, seed said, we say, why)
const DIFFERENCES: &[Row] = &[
    ("", "unexpected token on line 5031", None, true, Fatal,
     "`503` inside `5031` is a line number, not a status: words, not substrings"),
    ("", "processed 4290 tokens before failing", None, true, Fatal,
     "`429` inside `4290` is a count"),
    ("", "Bad Request: messages.0.content: field required", Some(400), true, Fatal,
     "a malformed request fails on every model; the seed's own comment calls 400 permanent"),
    ("", "timeout must be a positive integer", Some(400), true, Fatal,
     "`timeout` names a parameter here; the 400 decides"),
    ("", "file not found: src/app.py", None, true, Fatal,
     "`not found` without `model` is not about the model"),
    ("", "tool `browser` is unavailable in this mode", None, true, Fatal,
     "`unavailable` without `model` is not about the model"),
    ("AuthenticationError", "invalid x-api-key", Some(401), true, Fatal,
     "a bad key is bad for every model of the account"),
    ("RateLimitError", "Rate limit reached for requests", Some(429), true, Retry,
     "a rate limit clears: the same model, after Retry-After"),
    ("", "Service Unavailable", Some(503), true, Retry,
     "a 503 is transient: the same model, later"),
    ("", "The model is overloaded", Some(529), true, Retry,
     "overload is transient"),
    ("", "upstream returned 502 Bad Gateway", Some(502), true, Retry,
     "a gateway error is transient"),
    ("", "please try again later", None, true, Retry,
     "the provider asks for a retry, not another model"),
    ("", "retrying in 20s (rate limit)", None, true, Retry,
     "the provider's own auto-retry signal: same model"),
    ("ProviderConnectionError", "ECONNRESET", None, true, Retry,
     "a dropped connection says nothing against the model"),
    ("TimeoutError", "Request timed out", None, false, Retry,
     "a timeout is transient (the seed: `timeouterror` never retried, `timeout` in a message always switched)"),
    ("", "", Some(500), false, Retry,
     "5xx is transient"),
    ("", "", Some(408), false, Retry,
     "408 Request Timeout is transient"),
    ("ContextLengthError", "prompt is too long: 210000 tokens > 200000 maximum", Some(400), false, Fallback,
     "a model with a larger context may take it"),
    ("BadRequestError", "This model's maximum context length is 8192 tokens", Some(400), false, Fallback,
     "OpenAI reports context overflow as a 400 BadRequestError; the message decides"),
    ("", "The model `gpt-9` does not exist or you do not have access to it.", Some(404), false, Fallback,
     "this model is missing; the next one may not be"),
    ("", "", Some(404), false, Fallback,
     "a 404 from a model API is a missing model"),
    ("", "You have exhausted your capacity on this model. Your quota will reset after 38s.", Some(429), false, Fallback,
     "per-model capacity (in both seed lists, stop won): another model has its own"),
    ("", "Quota exceeded for quota metric 'Generate Content API requests per minute'", Some(429), false, Retry,
     "a per-minute quota clears by itself"),
    ("", "You exceeded your current quota, please check your plan and billing details.", Some(429), false, Stop,
     "the seed's false could also mean fatal; stop tells the chain not to try other models"),
    ("RateLimitError", "You exceeded your current quota, please check your plan and billing details.", Some(429), true, Stop,
     "OpenAI raises an exhausted quota as a 429 RateLimitError; the seed switched models on it"),
    ("QuotaExceededError", "", None, false, Stop,
     "the seed's stop set, now its own outcome"),
    ("", "", Some(402), false, Stop,
     "402 Payment Required: nothing else will work either"),
];

/// Cases where we do what the seed did.
const AGREEMENTS: &[Row] = &[
    (
        "ProviderModelNotFoundError",
        "",
        None,
        true,
        Fallback,
        "model missing",
    ),
    (
        "ModelUnavailableError",
        "",
        None,
        true,
        Fallback,
        "model unavailable",
    ),
    ("", "model not found", None, true, Fallback, "model missing"),
    (
        "MessageAbortedError",
        "",
        None,
        false,
        Fatal,
        "the user cancelled",
    ),
    ("ValidationError", "", None, false, Fatal, "invalid request"),
    (
        "PermissionDeniedError",
        "",
        Some(403),
        false,
        Fatal,
        "no access",
    ),
    ("", "", Some(401), false, Fatal, "unauthorized"),
    ("", "", None, false, Fatal, "no evidence at all"),
];

#[test]
fn every_difference_from_the_seed() {
    let mut failures = Vec::new();
    for &(name, message, status, seed_said, ours, why) in DIFFERENCES {
        assert_eq!(
            seed(name, message, status),
            seed_said,
            "the seed column is wrong for {name:?} {message:?} {status:?}"
        );
        assert!(
            differs(seed_said, ours),
            "not a difference: {name:?} {message:?} {status:?}"
        );
        let got = classify_error(Some(name), Some(message), status);
        if got != ours {
            failures.push(format!(
                "{name:?} {message:?} {status:?}: seed said {}, we say {ours}, got {got} ({why})",
                seed_meant(seed_said)
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn where_we_agree_with_the_seed() {
    for &(name, message, status, seed_said, ours, why) in AGREEMENTS {
        assert_eq!(seed(name, message, status), seed_said, "{why}");
        assert!(!differs(seed_said, ours), "{why}");
        assert_eq!(
            classify_error(Some(name), Some(message), status),
            ours,
            "{name:?} {message:?} {status:?}: {why}"
        );
    }
}

#[test]
fn real_provider_errors() {
    // (name, message, status, class, evidence)
    let cases: &[(&str, &str, Option<u16>, ErrorClass, Evidence)] = &[
        // OpenAI
        ("", r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#, Some(429), Stop, Evidence::Message),
        ("", "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000", Some(429), Retry, Evidence::Message),
        ("context_length_exceeded", "", Some(400), Fallback, Evidence::Name),
        ("invalid_api_key", "Incorrect API key provided", Some(401), Fatal, Evidence::Name),
        ("", "The model `gpt-4-32k` does not exist", None, Fallback, Evidence::Message),
        // Anthropic
        ("overloaded_error", "Overloaded", Some(529), Retry, Evidence::Message),
        ("rate_limit_error", "Number of request tokens has exceeded your rate limit", Some(429), Retry, Evidence::Name),
        ("invalid_request_error", "Your credit balance is too low to access the Anthropic API.", Some(400), Stop, Evidence::Message),
        ("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum", Some(400), Fallback, Evidence::Message),
        ("invalid_request_error", "messages: at least one message is required", Some(400), Fatal, Evidence::Name),
        ("not_found_error", "model: claude-9", Some(404), Fallback, Evidence::Status),
        ("", r#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-9"}}"#, None, Fallback, Evidence::Message),
        ("", "Claude AI usage limit reached|1790200800", None, Stop, Evidence::Message),
        // Gemini
        ("", "models/gemini-9-pro is not found for API version v1beta", Some(404), Fallback, Evidence::Message),
        ("", "Resource has been exhausted (e.g. check quota).", Some(429), Retry, Evidence::Status),
        ("TerminalQuotaError", "You have exhausted your daily quota on this model.", None, Stop, Evidence::Name),
        ("RetryableQuotaError", "status 429", None, Retry, Evidence::Name),
        // Local servers
        ("", "Loading model", Some(503), Retry, Evidence::Message),
        ("", r#"{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#, Some(503), Retry, Evidence::Message),
        ("", "the request exceeds the available context size, try increasing it", Some(400), Fallback, Evidence::Message),
        ("", r#"model "llama9" not found, try pulling it first"#, Some(404), Fallback, Evidence::Message),
        ("", "", Some(501), Fallback, Evidence::Status),
        // Transport
        ("", "read ECONNRESET", None, Retry, Evidence::Message),
        ("", "Error: socket hang up", None, Retry, Evidence::Message),
        ("", "connect ECONNREFUSED 127.0.0.1:8080", None, Retry, Evidence::Message),
        ("", "HTTP_503", None, Retry, Evidence::Message),
        ("", "The model is currently overloaded, service unavailable", None, Retry, Evidence::Message),
        // Chinese providers
        ("", "账户余额不足，请充值后重试", None, Stop, Evidence::Message),
        ("", "请求过于频繁，请稍后重试", None, Retry, Evidence::Message),
        // Nothing about the model
        ("", "the model produced a tool call: tool not found", None, Fatal, Evidence::None),
        ("", "invalid api key", None, Fatal, Evidence::Message),
        ("", "something odd happened", Some(200), Fatal, Evidence::None),
        ("SomeSdkError", "", None, Fatal, Evidence::None),
    ];
    for &(name, message, status, class, evidence) in cases {
        let got = explain_error(Some(name), Some(message), status);
        assert_eq!(
            (got.class, got.evidence),
            (class, evidence),
            "{name:?} {message:?} {status:?}: rule {:?}",
            got.rule
        );
    }
}

#[test]
fn none_and_empty_are_the_same_and_names_ignore_spelling() {
    assert_eq!(classify_error(None, None, None), Fatal);
    assert_eq!(
        explain_error(Some(""), Some(""), None).evidence,
        Evidence::None
    );
    for name in [
        "RateLimitError",
        "rate_limit_error",
        "rate-limit-error",
        "RATELIMITERROR",
    ] {
        assert_eq!(
            explain_error(Some(name), None, None).rule,
            "ratelimiterror",
            "{name}"
        );
    }
}

#[test]
fn status_table() {
    let table: &[(u16, Option<ErrorClass>)] = &[
        (200, None),
        (302, None),
        (399, None),
        (400, Some(Fatal)),
        (401, Some(Fatal)),
        (402, Some(Stop)),
        (403, Some(Fatal)),
        (404, Some(Fallback)),
        (408, Some(Retry)),
        (409, Some(Retry)),
        (413, Some(Fatal)),
        (422, Some(Fatal)),
        (425, Some(Retry)),
        (429, Some(Retry)),
        (499, Some(Fatal)),
        (500, Some(Retry)),
        (501, Some(Fallback)),
        (502, Some(Retry)),
        (503, Some(Retry)),
        (504, Some(Retry)),
        (529, Some(Retry)),
        (599, Some(Retry)),
        (600, None),
    ];
    for &(status, class) in table {
        assert_eq!(classify_status(status).map(|(c, _)| c), class, "{status}");
    }
}

#[test]
fn error_class_names() {
    assert_eq!(ErrorClass::NAMES, ["retry", "fallback", "stop", "fatal"]);
    assert_eq!("Fallback".parse::<ErrorClass>().unwrap(), Fallback);
    assert!("next".parse::<ErrorClass>().is_err());
    assert_eq!(serde_json::to_string(&Stop).unwrap(), "\"stop\"");
    assert_eq!(Evidence::NAMES, ["name", "message", "status", "none"]);
}

#[test]
fn retry_after_seconds_and_http_dates() {
    // Sun, 06 Nov 1994 08:49:37 GMT is 784111777.
    let now = UNIX_EPOCH + Duration::from_secs(784_111_777 - 90);
    let cases: &[(&str, Option<Duration>)] = &[
        ("120", Some(Duration::from_secs(120))),
        (" 0 ", Some(Duration::ZERO)),
        ("1.5", Some(Duration::from_millis(1500))),
        ("0.0000000019", Some(Duration::from_nanos(1))),
        ("-1", None),
        ("+5", None),
        ("1e3", None),
        ("1.", None),
        (".5", None),
        ("", None),
        ("soon", None),
        ("99999999999999999999999", None),
        (
            "Sun, 06 Nov 1994 08:49:37 GMT",
            Some(Duration::from_secs(90)),
        ),
        (
            "sun, 06 nov 1994 08:49:37 gmt",
            Some(Duration::from_secs(90)),
        ),
        (
            "Sun, 06 Nov 1994 08:49:37 UTC",
            Some(Duration::from_secs(90)),
        ),
        (
            "Sunday, 06-Nov-94 08:49:37 GMT",
            Some(Duration::from_secs(90)),
        ),
        ("Sun Nov  6 08:49:37 1994", Some(Duration::from_secs(90))),
        ("Sun, 06 Nov 1994 08:47:00 GMT", Some(Duration::ZERO)), // in the past
        (
            "Sun, 06 Nov 1994 08:49:60 GMT",
            Some(Duration::from_secs(112)),
        ), // leap second read as :59
        ("Sun, 06 Nov 1994 08:49:37 +0000", None),
        ("Sun, 31 Feb 1994 08:49:37 GMT", None),
        ("Sun, 06 Nov 1994 24:00:00 GMT", None),
        ("Sun, 6 Nov 1994 08:49:37 GMT", None),
        ("Funday, 06 Nov 1994 08:49:37 GMT", None),
        ("Sun, 06 Nov 94 08:49:37 GMT", None),
    ];
    for &(value, expected) in cases {
        assert_eq!(parse_retry_after(value, now), expected, "{value:?}");
    }
    // RFC 850 two-digit years: at most 50 years ahead of now, else the century before.
    let now_2030 = UNIX_EPOCH + Duration::from_secs(1_893_456_000); // 2030-01-01
    assert_eq!(
        parse_retry_after("Friday, 01-Jan-80 00:00:00 GMT", now_2030),
        Some(Duration::from_secs(3_471_292_800 - 1_893_456_000)),
        "2080 is 50 years ahead: still this century"
    );
    assert_eq!(
        parse_retry_after("Saturday, 01-Jan-81 00:00:00 GMT", now_2030),
        Some(Duration::ZERO),
        "2081 is more than 50 years ahead: 1981, in the past"
    );
}
