//! Error classification: what a failed model call means for the next one.

use super::words::Words;
use crate::names::macros::named_enum;

/// What to do after a model call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorClass {
    /// Try the same model again later (rate limit, overload, 5xx, a
    /// dropped connection, a timeout), after `Retry-After` when the
    /// provider gave one.
    Retry,
    /// Try the next model of the chain (this model is not found, not
    /// available, or the request is too long for its context).
    Fallback,
    /// Stop the chain: quota, billing or credits are exhausted, so no other
    /// model of the account will work either.
    Stop,
    /// The request itself is wrong (bad request, authentication,
    /// validation, cancelled): neither a retry nor another model helps.
    Fatal,
}
named_enum!(ErrorClass, "error class", {
    Retry => "retry",
    Fallback => "fallback",
    Stop => "stop",
    Fatal => "fatal",
});

/// Which input decided a [`Classification`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Evidence {
    /// The error's name (SDK class, API error type or code).
    Name,
    /// A phrase of the message.
    Message,
    /// The HTTP status.
    Status,
    /// Nothing matched: the default, `fatal`.
    None,
}
named_enum!(Evidence, "evidence", {
    Name => "name",
    Message => "message",
    Status => "status",
    None => "none",
});

/// An [`ErrorClass`] with what decided it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Classification {
    /// The outcome.
    pub class: ErrorClass,
    /// Which input decided it.
    pub evidence: Evidence,
    /// The rule that matched: the phrase, the normalized name, or the
    /// status group (`"status 5xx"`); `"default"` for [`Evidence::None`].
    pub rule: &'static str,
}

/// Messages that say the limit is a *rate* (per minute or second): it
/// clears by itself, so they mean `retry` even when they say "quota".
const RATE_WINDOW: &[&str] = &[
    "per minute",
    "per min",
    "per second",
    "per sec",
    "rpm",
    "tpm",
    "rps",
];

/// A model that is loading or overloaded will be there in a moment, even
/// when the message also calls it "unavailable".
const TRANSIENT: &[&str] = &[
    "loading model",
    "model is loading",
    "model loading",
    "model is currently loading",
    "warming up",
    "overloaded",
    "high demand",
];

/// Names (normalized: lower-case ASCII letters and digits only) that mean `stop`.
const STOP_NAMES: &[&str] = &[
    "quotaexceedederror",
    "quotaexceeded",
    "insufficientquota",
    "insufficientquotaerror",
    "insufficientcredits",
    "insufficientcreditserror",
    "freeusagelimiterror",
    "usagelimiterror",
    "terminalquotaerror",
    "billingerror",
    "billinghardlimitreached",
    "paymentrequired",
    "paymentrequirederror",
];

/// Message phrases that mean `stop`.
const STOP_PHRASES: &[&str] = &[
    "insufficient quota",
    "exceeded your current quota",
    "quota exceeded",
    "quota has been exceeded",
    "quota exhausted",
    "out of quota",
    "billing",
    "payment required",
    "payment method",
    "insufficient credit",
    "insufficient credits",
    "insufficient balance",
    "insufficient funds",
    "credit balance",
    "out of credits",
    "no credits",
    "not enough credits",
    "credits exhausted",
    "usage limit",
    "spending limit",
    "monthly limit",
    "hard limit",
    "free usage limit",
    "subscription has expired",
    "no active subscription",
    "余额不足",
    "额度不足",
    "额度已用完",
    "欠费",
    "充值",
];

/// Names that mean `fallback`.
const FALLBACK_NAMES: &[&str] = &[
    "providermodelnotfounderror",
    "modelnotfounderror",
    "modelnotfound",
    "modelunavailableerror",
    "modelnotavailable",
    "modelnotavailableerror",
    "contextlengtherror",
    "contextlengthexceeded",
    "contextlengthexceedederror",
    "contextwindowexceeded",
    "contextwindowexceedederror",
    "contextoverflowerror",
];

/// Message phrases that mean `fallback`: the request is too long for this
/// model's context, or the model is not there.
const FALLBACK_PHRASES: &[&str] = &[
    "context length",
    "context window",
    "context size",
    "context limit",
    "maximum context",
    "prompt is too long",
    "input is too long",
    "too many input tokens",
    "reduce the length",
    "no such model",
    "unknown model",
    "invalid model",
    "unsupported model",
    "not a valid model",
    "exhausted your capacity",
    "capacity on this model",
    "上下文长度",
    "上下文过长",
    "模型不存在",
];

/// `model` (or `models`, `deployment`) followed, with at most
/// [`NEAR_WINDOW`] whitespace-separated chunks in between, by one of these.
const MODEL_SUBJECTS: &[&str] = &["model", "models", "deployment"];
const MODEL_MISSING: &[&str] = &[
    "not found",
    "does not exist",
    "not exist",
    "not available",
    "unavailable",
    "not supported",
    "no longer available",
    "decommissioned",
    "deprecated",
];
const NEAR_WINDOW: usize = 3;

/// Names that mean `retry`.
const RETRY_NAMES: &[&str] = &[
    "ratelimiterror",
    "ratelimitexceeded",
    "ratelimit",
    "ratelimitederror",
    "retryablequotaerror",
    "overloadederror",
    "overloaded",
    "providerconnectionerror",
    "apiconnectionerror",
    "connectionerror",
    "timeouterror",
    "apitimeouterror",
    "internalservererror",
    "serviceunavailableerror",
    "econnreset",
    "econnrefused",
    "etimedout",
];

/// Names that mean `fatal`.
const FATAL_NAMES: &[&str] = &[
    "messageabortederror",
    "aborterror",
    "permissiondeniederror",
    "permissionerror",
    "authenticationerror",
    "autherror",
    "invalidapikey",
    "invalidapikeyerror",
    "validationerror",
    "syntaxerror",
    "typeerror",
    "usererror",
    "badrequesterror",
    "invalidrequesterror",
    "invalidrequest",
    "unprocessableentityerror",
];

/// Message phrases that mean `retry`. Status codes appear as whole words
/// only; `500` is left out (it is a common count: "500 tokens").
const RETRY_PHRASES: &[&str] = &[
    "rate limit",
    "rate limited",
    "ratelimit",
    "too many requests",
    "at capacity",
    "over capacity",
    "server is busy",
    "try again",
    "retry later",
    "please retry",
    "temporarily unavailable",
    "service unavailable",
    "internal server error",
    "internal error",
    "server error",
    "bad gateway",
    "gateway timeout",
    "upstream connect",
    "resource exhausted",
    "cooling down",
    "timeout",
    "timed out",
    "deadline exceeded",
    "connection reset",
    "connection refused",
    "connection closed",
    "connection aborted",
    "connection lost",
    "connection error",
    "network error",
    "socket hang up",
    "broken pipe",
    "unexpected eof",
    "econnreset",
    "econnrefused",
    "etimedout",
    "epipe",
    "fetch failed",
    "408",
    "429",
    "502",
    "503",
    "504",
    "529",
    "请求过于频繁",
    "限流",
    "繁忙",
    "超时",
    "稍后重试",
];

/// Message phrases that mean `fatal` (the default anyway; they name the
/// rule that decided).
const FATAL_PHRASES: &[&str] = &[
    "bad request",
    "invalid request",
    "invalid api key",
    "incorrect api key",
    "invalid x api key",
    "unauthorized",
    "unauthenticated",
    "authentication",
    "forbidden",
    "permission denied",
    "access denied",
    "not authorized",
    "validation",
    "invalid argument",
    "invalid parameter",
    "invalid value",
    "malformed",
    "unprocessable",
    "content policy",
    "content filter",
    "aborted",
    "cancelled",
    "canceled",
];

fn normalize_name(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

fn find_name(name: &str, names: &[&'static str]) -> Option<&'static str> {
    names.iter().copied().find(|n| *n == name)
}

/// The class an HTTP status alone gives, with its rule; `None` outside 400–599.
pub fn classify_status(status: u16) -> Option<(ErrorClass, &'static str)> {
    Some(match status {
        402 => (ErrorClass::Stop, "status 402"),
        404 => (ErrorClass::Fallback, "status 404"),
        408 | 409 | 425 | 429 => (ErrorClass::Retry, "status 408/409/425/429"),
        400..=499 => (ErrorClass::Fatal, "status 4xx"),
        501 => (ErrorClass::Fallback, "status 501"),
        500..=599 => (ErrorClass::Retry, "status 5xx"),
        _ => return None,
    })
}

/// [`classify_error`] with what decided it. The rules, first match wins:
///
/// | # | input | matches | class |
/// |---|---|---|---|
/// | 1 | message | a rate window (`per minute`, `per second`, `rpm`, `tpm`, ...), a loading or overloaded model (`loading model`, `model is loading`, `warming up`, `overloaded`, `high demand`) | `retry` |
/// | 2 | name, message | quota, billing, credits (`insufficient_quota`, `exceeded your current quota`, `billing`, `credit balance`, `usage limit`, `余额不足`, ...) | `stop` |
/// | 3 | name, message | context too long (`context length`, `context window`, `prompt is too long`, ...); model missing (`model` … `not found` / `does not exist` / `not available` / `unavailable` / `not supported` within 3 chunks, `no such model`, `unknown model`, `exhausted your capacity`, ...) | `fallback` |
/// | 4 | name | rate limit, overload, connection, timeout, 5xx names | `retry` |
/// | 4 | name | aborted, permission, authentication, validation, bad request names | `fatal` |
/// | 5 | status | 402 | `stop` |
/// | 5 | status | 404, 501 | `fallback` |
/// | 5 | status | 408, 409, 425, 429, other 5xx (529 included) | `retry` |
/// | 5 | status | other 4xx | `fatal` |
/// | 6 | message | `rate limit`, `too many requests`, `try again`, `timeout`, `timed out`, `connection reset`, `service unavailable`, `bad gateway`, `408`/`429`/`502`/`503`/`504`/`529` as words, ... | `retry` |
/// | 7 | message | `bad request`, `unauthorized`, `invalid api key`, `forbidden`, `validation`, ... | `fatal` |
/// | 8 | — | nothing | `fatal` |
///
/// Why this order: what the message *specifically* says about quota (2)
/// or about the model (3) beats a generic status or class name — OpenAI
/// answers an exhausted quota with 429 and `RateLimitError`, and a too-long
/// prompt with 400 and `BadRequestError`. A rate window (1) beats "quota"
/// because a per-minute quota clears by itself, and an overloaded or
/// loading model (1) beats "unavailable" because it will be back. Below
/// that, structured inputs (name, status) beat generic message words.
///
/// Names are compared exactly after removing everything but ASCII letters
/// and digits and lower-casing (`RateLimitError`, `rate_limit_error`,
/// `rate-limit-error` are one name); unknown names give no evidence. Message
/// phrases match on word boundaries (see the [module docs](super)): `503`
/// never matches `line 5031`. Statuses outside 400–599 give no evidence.
///
/// Guarantees: total (never panics, any input); the same class for any
/// ASCII case of the message, and when one non-space separator is written
/// for another (`context_length`, `context-length`, `context.length`).
pub fn explain_error(
    name: Option<&str>,
    message: Option<&str>,
    http_status: Option<u16>,
) -> Classification {
    let name = name.map(normalize_name).unwrap_or_default();
    let words = Words::new(message.unwrap_or(""));
    let by_message = |class, rule| Classification {
        class,
        evidence: Evidence::Message,
        rule,
    };
    let by_name = |class, rule| Classification {
        class,
        evidence: Evidence::Name,
        rule,
    };

    // 1. rate windows, loading or overloaded models: transient whatever else is said.
    if let Some(rule) = words
        .first_of(RATE_WINDOW)
        .or_else(|| words.first_of(TRANSIENT))
    {
        return by_message(ErrorClass::Retry, rule);
    }
    // 2. stop.
    if let Some(rule) = find_name(&name, STOP_NAMES) {
        return by_name(ErrorClass::Stop, rule);
    }
    if let Some(rule) = words.first_of(STOP_PHRASES) {
        return by_message(ErrorClass::Stop, rule);
    }
    // 3. fallback.
    if let Some(rule) = find_name(&name, FALLBACK_NAMES) {
        return by_name(ErrorClass::Fallback, rule);
    }
    if let Some(rule) = words.first_of(FALLBACK_PHRASES) {
        return by_message(ErrorClass::Fallback, rule);
    }
    for subject in MODEL_SUBJECTS {
        for missing in MODEL_MISSING {
            if words.has_near(subject, missing, NEAR_WINDOW) {
                return by_message(ErrorClass::Fallback, missing);
            }
            // "not_found_error: model ...": the reverse order, adjacent only.
            if words.has_near(missing, subject, 0) {
                return by_message(ErrorClass::Fallback, missing);
            }
        }
    }
    // 4. the other names.
    if let Some(rule) = find_name(&name, RETRY_NAMES) {
        return by_name(ErrorClass::Retry, rule);
    }
    if let Some(rule) = find_name(&name, FATAL_NAMES) {
        return by_name(ErrorClass::Fatal, rule);
    }
    // 5. status.
    if let Some((class, rule)) = http_status.and_then(classify_status) {
        return Classification {
            class,
            evidence: Evidence::Status,
            rule,
        };
    }
    // 6, 7. generic message words.
    if let Some(rule) = words.first_of(RETRY_PHRASES) {
        return by_message(ErrorClass::Retry, rule);
    }
    if let Some(rule) = words.first_of(FATAL_PHRASES) {
        return by_message(ErrorClass::Fatal, rule);
    }
    // 8. default.
    Classification {
        class: ErrorClass::Fatal,
        evidence: Evidence::None,
        rule: "default",
    }
}

/// What a failed model call means for the next one: `retry` the same model
/// later, `fallback` to the next model, `stop` the chain (quota, billing),
/// or `fatal` (the request is wrong). The rules are those of
/// [`explain_error`]; `None` and empty strings are the same (no evidence).
pub fn classify_error(
    name: Option<&str>,
    message: Option<&str>,
    http_status: Option<u16>,
) -> ErrorClass {
    explain_error(name, message, http_status).class
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_phrase_has_words_and_is_lower_case() {
        for list in [
            RATE_WINDOW,
            TRANSIENT,
            STOP_PHRASES,
            FALLBACK_PHRASES,
            MODEL_SUBJECTS,
            MODEL_MISSING,
            RETRY_PHRASES,
            FATAL_PHRASES,
        ] {
            for phrase in list {
                assert_eq!(*phrase, phrase.to_lowercase());
                assert!(Words::new(phrase).has(phrase), "{phrase:?}");
            }
        }
        for list in [STOP_NAMES, FALLBACK_NAMES, RETRY_NAMES, FATAL_NAMES] {
            for name in list {
                assert_eq!(normalize_name(name), *name);
            }
        }
    }
}
