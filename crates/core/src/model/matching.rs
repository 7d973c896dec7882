//! Fuzzy model-name matching: which served model a user's model name means.

/// The characters that separate the tokens of a model id: `-`, `_`, `.`,
/// `/`, `:` and `@` (Vertex AI writes versions as `claude-sonnet-4-5@20250929`).
pub const MODEL_SEPARATORS: &[char] = &['-', '_', '.', '/', ':', '@'];

fn is_sep(b: u8) -> bool {
    MODEL_SEPARATORS.iter().any(|&c| c as u32 == b as u32)
}

/// The form model names are compared in: trimmed, lower-cased, and with the
/// Claude family's minor version written with a dot.
///
/// `claude-(opus|sonnet|haiku)-N-M` and `claude-…-N.M` both become
/// `claude-…-N.M` when `M` has one or two digits and ends a token, so
/// `claude-sonnet-4-5-20250929` reads `claude-sonnet-4.5-20250929` while a
/// date is never taken for a minor version (`claude-opus-4-20250514` stays
/// as it is). Guarantees: idempotent (`normalize_model(normalize_model(s)) ==
/// normalize_model(s)`); never panics.
pub fn normalize_model(name: &str) -> String {
    let mut s = name.trim().to_lowercase();
    // Byte positions are stable: the rewrite replaces one ASCII byte by another.
    let mut from = 0;
    while let Some(found) = s[from..].find("claude-") {
        let at = from + found;
        from = at + "claude-".len();
        if at > 0 && !is_sep(s.as_bytes()[at - 1]) {
            continue;
        }
        let rest = &s[from..];
        let Some(family) = ["opus-", "sonnet-", "haiku-"]
            .iter()
            .find(|f| rest.starts_with(**f))
        else {
            continue;
        };
        let major_at = from + family.len();
        let bytes = s.as_bytes();
        let major_len = bytes[major_at..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let sep_at = major_at + major_len;
        if major_len == 0 || sep_at >= bytes.len() || !matches!(bytes[sep_at], b'-' | b'.') {
            continue;
        }
        let minor_len = bytes[sep_at + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let after = sep_at + 1 + minor_len;
        if (1..=2).contains(&minor_len) && (after == bytes.len() || is_sep(bytes[after])) {
            s.replace_range(sep_at..=sep_at, ".");
        }
    }
    s
}

/// True when `needle` occurs in `hay` as a run of whole tokens: the
/// occurrence starts at the beginning of `hay` or after a separator, and
/// ends at the end of `hay` or before a separator (a needle that itself
/// starts or ends with a separator brings its own boundary).
fn token_contains(hay: &str, needle: &str) -> bool {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    if n.is_empty() || n.len() > h.len() {
        return false;
    }
    (0..=h.len() - n.len()).any(|i| {
        let j = i + n.len();
        h[i..j] == *n
            && (i == 0 || is_sep(h[i - 1]) || is_sep(n[0]))
            && (j == h.len() || is_sep(h[j]) || is_sep(n[n.len() - 1]))
    })
}

/// The provider of a normalized id: the part before the first `/`, or the
/// whole id when it has none (a bare id counts as its own provider).
fn provider_of(normalized: &str) -> &str {
    normalized.split('/').next().unwrap_or(normalized)
}

/// The model in `available` that `target` names, or `None`.
///
/// Both sides are compared in their [`normalize_model`] form; the returned
/// string is the entry of `available` as given.
///
/// 1. A target without any letter or digit matches nothing.
/// 2. With `providers` non-empty, only the candidates whose provider (the
///    part before the first `/`; a bare id is its own provider) is one of
///    them take part, compared case-insensitively. An empty `providers`
///    filters nothing.
/// 3. A candidate takes part when the target occurs in it **as whole
///    tokens**: the occurrence begins at the start or after a separator and
///    ends at the end or before one (separators: [`MODEL_SEPARATORS`]). So
///    `gpt-4` matches `openai/gpt-4-turbo` but not `gpt-40-mini` or
///    `gpt-4o`; `qwen3` matches `qwen3-coder:30b` but `qwen` does not
///    match `qwen3-coder` (the digit belongs to the token: name the family
///    as it is written).
/// 4. The first non-empty rank wins: (a) the candidates equal to the target;
///    (b) those whose model part (after the first `/`) equals it; (c) all
///    that take part. Within a rank the shortest wins, and between equally
///    long ones the lexicographically smallest, so the answer never depends
///    on the order of `available`.
///
/// Guarantees: the result is an element of `available`; it is the same for
/// any order of `available`; never panics.
pub fn match_model<A, S>(target: &str, available: A, providers: &[&str]) -> Option<String>
where
    A: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let target = normalize_model(target);
    if !target.chars().any(char::is_alphanumeric) {
        return None;
    }
    let providers: Vec<String> = providers
        .iter()
        .map(|p| p.trim().to_lowercase())
        .filter(|p| !p.is_empty())
        .collect();
    // (rank, normalized length, original): the smallest tuple wins.
    let mut best: Option<(u8, usize, String)> = None;
    for candidate in available {
        let original = candidate.as_ref();
        let norm = normalize_model(original);
        if !providers.is_empty() && !providers.iter().any(|p| p == provider_of(&norm)) {
            continue;
        }
        if !token_contains(&norm, &target) {
            continue;
        }
        let rank = if norm == target {
            0
        } else if norm
            .split_once('/')
            .is_some_and(|(_, model)| model == target)
        {
            1
        } else {
            2
        };
        let key = (rank, norm.len(), original);
        let better = match &best {
            None => true,
            Some((r, l, o)) => key < (*r, *l, o.as_str()),
        };
        if better {
            best = Some((rank, norm.len(), original.to_owned()));
        }
    }
    best.map(|(_, _, original)| original)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_minor_versions_but_not_dates() {
        for (given, normalized) in [
            ("Claude-Sonnet-4-5", "claude-sonnet-4.5"),
            ("claude-sonnet-4-5-20250929", "claude-sonnet-4.5-20250929"),
            ("anthropic/claude-opus-4-1", "anthropic/claude-opus-4.1"),
            ("claude-opus-4-20250514", "claude-opus-4-20250514"),
            ("claude-haiku-4.5", "claude-haiku-4.5"),
            ("xclaude-opus-4-1", "xclaude-opus-4-1"),
            ("claude-opus-4-", "claude-opus-4-"),
            ("claude-opus-", "claude-opus-"),
            ("claude-sonnet-4-5@20250929", "claude-sonnet-4.5@20250929"),
            ("  GPT-4o ", "gpt-4o"),
        ] {
            assert_eq!(normalize_model(given), normalized, "{given:?}");
            assert_eq!(normalize_model(normalized), normalized, "{given:?}");
        }
    }

    #[test]
    fn token_containment() {
        assert!(token_contains("openai/gpt-4-turbo", "gpt-4"));
        assert!(!token_contains("gpt-40-mini", "gpt-4"));
        assert!(!token_contains("xgpt-4", "gpt-4"));
        // Overlapping occurrences: the second one is aligned.
        assert!(token_contains("xa-a-a", "a-a"));
        assert!(token_contains("qwen3-coder", "qwen3-"));
        assert!(!token_contains("gpt", "gpt-4"));
    }
}
