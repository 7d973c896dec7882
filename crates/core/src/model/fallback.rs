//! Fallback chains: the models to try, in order, when one cannot serve.

use super::classify::ErrorClass;
use super::matching::{normalize_model, MODEL_SEPARATORS};
use crate::names::macros::named_enum;
use std::fmt;
use std::str::FromStr;

/// The variants a trailing space-separated word may name
/// (`openai/gpt-5 high`). A variant in parentheses (`gpt-5(high)`) may be
/// any word.
pub const KNOWN_VARIANTS: &[&str] = &[
    "low", "medium", "high", "xhigh", "max", "minimal", "none", "auto", "thinking",
];

/// One model of a fallback chain: `provider/model(variant)`.
///
/// Guarantees: the model is non-empty and has no empty `/` segment, no
/// whitespace, no parenthesis and no control character; the provider, when
/// present, is non-empty with the same restrictions and no `/`; the variant,
/// when present, is non-empty with the same restrictions. `Display` writes
/// the canonical form, which parses back to an equal entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FallbackEntry {
    provider: Option<String>,
    model: String,
    variant: Option<String>,
}

impl FallbackEntry {
    /// The provider (`openai` in `openai/gpt-5`), or `None` for a bare
    /// model: the caller's own (context) provider.
    pub fn provider(&self) -> Option<&str> {
        self.provider.as_deref()
    }

    /// The model (`gpt-5`; `b/c` in `a/b/c`: only the first `/` splits).
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The variant (`high` in `gpt-5(high)` or `gpt-5 high`), if any.
    pub fn variant(&self) -> Option<&str> {
        self.variant.as_deref()
    }

    /// `provider/model`, or `model` for a bare entry (no variant).
    pub fn id(&self) -> String {
        match &self.provider {
            Some(p) => format!("{p}/{}", self.model),
            None => self.model.clone(),
        }
    }

    /// Parses one entry; `index` is its position in the chain (for the
    /// error). See [`FallbackChain::parse`] for the grammar.
    pub fn parse_at(entry: &str, index: usize) -> Result<FallbackEntry, FallbackParseError> {
        let fail = |reason, message: String| FallbackParseError {
            index,
            entry: entry.to_owned(),
            reason,
            message,
        };
        let text = entry.trim();
        if text.is_empty() {
            return Err(fail(
                FallbackErrorReason::Empty,
                "the entry is empty; write provider/model(variant), e.g. openai/gpt-5(high)".into(),
            ));
        }
        let (body, variant) =
            split_variant(text).map_err(|(reason, message)| fail(reason, message))?;
        if let Some(bad) = body.chars().find(|&c| bad_char(c)) {
            return Err(fail(
                FallbackErrorReason::BadCharacter,
                format!("{bad:?} cannot appear in a model id; write provider/model(variant)"),
            ));
        }
        let (provider, model) = match body.split_once('/') {
            Some((p, m)) => (Some(p), m),
            None => (None, body),
        };
        if provider == Some("") {
            return Err(fail(
                FallbackErrorReason::EmptyProvider,
                "the provider before `/` is empty; write provider/model or just model".into(),
            ));
        }
        if model.is_empty() || model.split('/').any(str::is_empty) {
            return Err(fail(
                FallbackErrorReason::EmptyModel,
                "the model (or a `/` segment of it) is empty; write provider/model(variant)".into(),
            ));
        }
        Ok(FallbackEntry {
            provider: provider.map(str::to_owned),
            model: model.to_owned(),
            variant: variant.map(str::to_owned),
        })
    }

    /// The key two entries are duplicates by: normalized id and lower-cased variant.
    fn key(&self) -> (String, Option<String>) {
        (
            normalize_model(&self.id()),
            self.variant.as_ref().map(|v| v.to_lowercase()),
        )
    }
}

fn bad_char(c: char) -> bool {
    c.is_whitespace() || c.is_control() || c == '(' || c == ')'
}

type Reasoned = (FallbackErrorReason, String);

/// Splits `model(variant)` or `model VARIANT` off a trimmed, non-empty entry.
fn split_variant(text: &str) -> Result<(&str, Option<&str>), Reasoned> {
    if let Some(open) = text.find('(') {
        let Some(close_rel) = text[open..].find(')') else {
            return Err((
                FallbackErrorReason::UnclosedVariant,
                "the variant's `(` has no `)`; write model(variant)".into(),
            ));
        };
        let close = open + close_rel;
        if close + 1 != text.len() {
            return Err((
                FallbackErrorReason::TextAfterVariant,
                format!(
                    "{:?} follows the variant; the variant ends the entry: model(variant)",
                    &text[close + 1..]
                ),
            ));
        }
        let variant = text[open + 1..close].trim();
        if variant.is_empty() {
            return Err((
                FallbackErrorReason::EmptyVariant,
                "the variant in `()` is empty; remove the parentheses or name a variant".into(),
            ));
        }
        if let Some(bad) = variant.chars().find(|&c| bad_char(c)) {
            return Err((
                FallbackErrorReason::BadCharacter,
                format!("{bad:?} cannot appear in a variant"),
            ));
        }
        return Ok((text[..open].trim_end(), Some(variant)));
    }
    if let Some((head, tail)) = text.rsplit_once(char::is_whitespace) {
        let known = KNOWN_VARIANTS.iter().find(|v| v.eq_ignore_ascii_case(tail));
        return match known {
            Some(v) => Ok((head.trim_end(), Some(v))),
            None => Err((
                FallbackErrorReason::UnknownVariant,
                format!(
                    "{tail:?} is not a variant (a model id has no spaces); a trailing variant is one of: {}, or any word in parentheses: model(variant)",
                    KNOWN_VARIANTS.join(", ")
                ),
            )),
        };
    }
    Ok((text, None))
}

impl fmt::Display for FallbackEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = &self.provider {
            write!(f, "{p}/")?;
        }
        f.write_str(&self.model)?;
        if let Some(v) = &self.variant {
            write!(f, "({v})")?;
        }
        Ok(())
    }
}

impl FromStr for FallbackEntry {
    type Err = FallbackParseError;

    /// [`FallbackEntry::parse_at`] with index 0.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FallbackEntry::parse_at(s, 0)
    }
}

/// Why a fallback entry did not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FallbackErrorReason {
    /// The entry is blank.
    Empty,
    /// `/model`: nothing before the `/`.
    EmptyProvider,
    /// `provider/`, `a//b`, `(high)`: no model, or an empty `/` segment.
    EmptyModel,
    /// `model(high`: a `(` without `)`.
    UnclosedVariant,
    /// `model()`.
    EmptyVariant,
    /// `model(high)x`: text after the variant.
    TextAfterVariant,
    /// `gpt 5`: a trailing word that is not one of [`KNOWN_VARIANTS`].
    UnknownVariant,
    /// Whitespace, a control character or a stray parenthesis in the id.
    BadCharacter,
    /// The same entry (normalized id and variant) appears earlier in the chain.
    Duplicate,
}
named_enum!(FallbackErrorReason, "fallback error reason", {
    Empty => "empty",
    EmptyProvider => "empty_provider",
    EmptyModel => "empty_model",
    UnclosedVariant => "unclosed_variant",
    EmptyVariant => "empty_variant",
    TextAfterVariant => "text_after_variant",
    UnknownVariant => "unknown_variant",
    BadCharacter => "bad_character",
    Duplicate => "duplicate",
});

/// A fallback entry that did not parse: which one, what it said, and why.
///
/// Converts into [`crate::Error`] as `invalid_input` with the details
/// `index`, `entry` and `reason`; the message says how to write it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("fallback entry [{index}] {entry:?}: {message}")]
pub struct FallbackParseError {
    /// The entry's position in the chain (0-based).
    pub index: usize,
    /// The entry as given.
    pub entry: String,
    /// Why it did not parse.
    pub reason: FallbackErrorReason,
    message: String,
}

impl FallbackParseError {
    /// What is wrong and how to write it instead (without the entry).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<FallbackParseError> for crate::Error {
    fn from(e: FallbackParseError) -> Self {
        crate::Error::invalid_input(e.to_string())
            .with_detail("index", e.index)
            .with_detail("entry", e.entry.as_str())
            .with_detail("reason", e.reason.as_str())
    }
}

/// An ordered list of models to try: the first, then the next each time one
/// fails with [`ErrorClass::Fallback`].
///
/// Guarantees: every entry is a valid [`FallbackEntry`]; no two entries are
/// duplicates (same normalized id and variant). Serde reads and writes the
/// chain as a list of entry strings (`["openai/gpt-5(high)", "qwen3-coder"]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FallbackChain {
    entries: Vec<FallbackEntry>,
}

impl FallbackChain {
    /// Parses the entries, in order.
    ///
    /// Grammar of one entry (surrounding whitespace ignored):
    /// `[provider/]model[(variant)]` or `[provider/]model VARIANT` where
    /// `VARIANT` is one of [`KNOWN_VARIANTS`] (case-insensitive, stored
    /// lower-case). Only the first `/` splits: `a/b/c` is provider `a`,
    /// model `b/c`. No provider means the caller's own. The first entry that
    /// does not parse, or repeats an earlier one, is the error.
    pub fn parse<I, S>(entries: I) -> Result<FallbackChain, FallbackParseError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut parsed: Vec<FallbackEntry> = Vec::new();
        for (index, text) in entries.into_iter().enumerate() {
            let entry = FallbackEntry::parse_at(text.as_ref(), index)?;
            if let Some(first) = parsed.iter().position(|e| e.key() == entry.key()) {
                return Err(FallbackParseError {
                    index,
                    entry: text.as_ref().to_owned(),
                    reason: FallbackErrorReason::Duplicate,
                    message: format!("it repeats entry [{first}] {}", parsed[first]),
                });
            }
            parsed.push(entry);
        }
        Ok(FallbackChain { entries: parsed })
    }

    /// The entries, in order.
    pub fn entries(&self) -> &[FallbackEntry] {
        &self.entries
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the chain has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry at `index`.
    pub fn get(&self, index: usize) -> Option<&FallbackEntry> {
        self.entries.get(index)
    }

    /// The index of the entry to try after entry `current` failed with
    /// `class`:
    ///
    /// | class | next |
    /// |---|---|
    /// | `retry` | `current` again, after the delay (`Retry-After` when given; bounding the retries is the caller's policy, and once they are spent the caller treats the error as `fallback`) |
    /// | `fallback` | `current + 1`, or `None` when the chain is exhausted |
    /// | `stop` | `None`: quota or billing, no other entry will work either |
    /// | `fatal` | `None`: the request itself is wrong |
    ///
    /// `None` as well when `current` is not an index of the chain.
    pub fn next(&self, current: usize, class: ErrorClass) -> Option<usize> {
        if current >= self.entries.len() {
            return None;
        }
        match class {
            ErrorClass::Retry => Some(current),
            ErrorClass::Fallback => Some(current + 1).filter(|&i| i < self.entries.len()),
            ErrorClass::Stop | ErrorClass::Fatal => None,
        }
    }

    /// The index of the entry that names `model_id` most specifically: the
    /// entry with the longest id that is a **whole-token prefix** of
    /// `model_id` (equal to it, or followed by a separator), compared in
    /// [`normalize_model`] form; the first such entry on a tie. A bare entry
    /// (no provider) is matched against the model part of `model_id` (after
    /// its first `/`) as well as against the whole of it.
    ///
    /// `openai/gpt-5` is a prefix of `openai/gpt-5-mini` and
    /// `openai/gpt-5:latest`, never of `openai/gpt-50`.
    pub fn most_specific(&self, model_id: &str) -> Option<usize> {
        let id = normalize_model(model_id);
        let model_part = id.split_once('/').map(|(_, m)| m);
        let mut best: Option<(usize, usize)> = None; // (length, index)
        for (index, entry) in self.entries.iter().enumerate() {
            let key = normalize_model(&entry.id());
            let hit = token_prefix(&id, &key)
                || (entry.provider.is_none() && model_part.is_some_and(|m| token_prefix(m, &key)));
            if hit && best.is_none_or(|(len, _)| key.len() > len) {
                best = Some((key.len(), index));
            }
        }
        best.map(|(_, index)| index)
    }
}

/// True when `prefix` is `id`, or starts `id` and is followed by a separator.
fn token_prefix(id: &str, prefix: &str) -> bool {
    !prefix.is_empty()
        && id.starts_with(prefix)
        && id[prefix.len()..]
            .chars()
            .next()
            .is_none_or(|c| MODEL_SEPARATORS.contains(&c))
}

impl serde::Serialize for FallbackEntry {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for FallbackEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl serde::Serialize for FallbackChain {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.entries.iter())
    }
}

impl<'de> serde::Deserialize<'de> for FallbackChain {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let texts = Vec::<String>::deserialize(deserializer)?;
        FallbackChain::parse(&texts).map_err(serde::de::Error::custom)
    }
}
