//! Word-boundary phrase matching, the one matcher of [`classify_error`]'s
//! message rules.
//!
//! A text is read as its *words*: the maximal runs of alphanumeric
//! characters, lower-cased. Everything else (spaces, `_`, `-`, `.`, quotes,
//! punctuation) only separates words. A phrase matches where its words occur
//! consecutively, whole: `"503"` is found in `"HTTP 503: busy"` and
//! `"error_503"`, never in `"line 5031"` or `"x503"`; `"context length"`
//! is found in `"context_length_exceeded"` and `"Context-Length"`.
//!
//! Phrases written in a script without spaces between words (CJK) cannot
//! use word boundaries; a phrase with any non-ASCII character is matched as
//! a plain substring of the lower-cased text instead.
//!
//! [`classify_error`]: super::classify_error

/// A text prepared for phrase matching: lower-cased, and split into words.
pub(crate) struct Words {
    lower: String,
    /// Byte ranges of the words in `lower`.
    spans: Vec<(usize, usize)>,
    /// For each word, the index of the whitespace-separated chunk holding it
    /// (`gpt-4-turbo` is one chunk of three words).
    chunks: Vec<usize>,
}

impl Words {
    /// Reads `text` (any string; never panics).
    pub(crate) fn new(text: &str) -> Words {
        let lower = text.to_lowercase();
        let mut spans = Vec::new();
        let mut chunks = Vec::new();
        let mut start = None;
        let mut chunk = 0;
        let mut in_space = false;
        for (i, c) in lower.char_indices() {
            if c.is_whitespace() {
                in_space = true;
            } else if in_space {
                in_space = false;
                chunk += 1;
            }
            match (c.is_alphanumeric(), start) {
                (true, None) => {
                    start = Some(i);
                    chunks.push(chunk);
                }
                (false, Some(s)) => {
                    spans.push((s, i));
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(s) = start {
            spans.push((s, lower.len()));
        }
        Words {
            lower,
            spans,
            chunks,
        }
    }

    fn word(&self, i: usize) -> &str {
        let (s, e) = self.spans[i];
        &self.lower[s..e]
    }

    /// The index of each word position where `phrase` (split into words the
    /// same way) starts; empty for a phrase without words.
    fn starts_of(&self, phrase: &[&str]) -> impl Iterator<Item = usize> + '_ {
        let phrase: Vec<String> = phrase.iter().map(|w| w.to_lowercase()).collect();
        let n = phrase.len();
        let last = if n == 0 || n > self.spans.len() {
            0
        } else {
            self.spans.len() - n + 1
        };
        (0..last).filter(move |&i| (0..n).all(|k| self.word(i + k) == phrase[k]))
    }

    /// True when `phrase` occurs as whole consecutive words (or, for a
    /// non-ASCII phrase, as a substring). A phrase without any word never
    /// matches.
    pub(crate) fn has(&self, phrase: &str) -> bool {
        if !phrase.is_ascii() {
            let p = phrase.to_lowercase();
            return !p.trim().is_empty() && self.lower.contains(p.as_str());
        }
        let words = split(phrase);
        !words.is_empty() && self.starts_of(&words).next().is_some()
    }

    /// The first of `phrases` that [`Words::has`] finds.
    pub(crate) fn first_of(&self, phrases: &[&'static str]) -> Option<&'static str> {
        phrases.iter().copied().find(|p| self.has(p))
    }

    /// True when `first` occurs and `second` starts after it with at most
    /// `window` whitespace-separated chunks in between (`window = 0`: in the
    /// same chunk or the next one). Chunks, not words, are counted so that a
    /// model id (`claude-sonnet-4-5-20250929`, one chunk) counts once. Both
    /// are ASCII phrases.
    pub(crate) fn has_near(&self, first: &str, second: &str, window: usize) -> bool {
        let a = split(first);
        let b = split(second);
        if a.is_empty() || b.is_empty() {
            return false;
        }
        let b_starts: Vec<usize> = self.starts_of(&b).collect();
        self.starts_of(&a).any(|i| {
            let end = i + a.len();
            let end_chunk = self.chunks[end - 1];
            b_starts
                .iter()
                .any(|&j| j >= end && self.chunks[j].saturating_sub(end_chunk + 1) <= window)
        })
    }
}

/// The words of an ASCII phrase.
fn split(phrase: &str) -> Vec<&str> {
    phrase
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_words_only() {
        let w = Words::new("Error on line 5031: HTTP_503 (x503) Context-Length");
        assert!(w.has("503"));
        assert!(w.has("http 503"));
        assert!(w.has("context length"));
        assert!(!w.has("50"));
        assert!(!w.has("031"));
        assert!(!w.has("line 503"));
        assert!(!w.has(""));
        assert!(!w.has("  -- "));
        assert!(Words::new("余额不足，请充值").has("余额不足"));
        assert!(!Words::new("abc").has("余额"));
    }

    #[test]
    fn near_respects_order_and_window() {
        let w = Words::new("The model `claude-sonnet-4-5-20250929` does not exist");
        assert_eq!(w.chunks, [0, 1, 2, 2, 2, 2, 2, 3, 4, 5]);
        assert!(w.has_near("model", "does not exist", 1));
        assert!(!w.has_near("model", "does not exist", 0));
        assert!(!w.has_near("does not exist", "model", 9));
        assert!(Words::new("model not found").has_near("model", "not found", 0));
        assert!(Words::new("not_found_error:model").has_near("not found", "model", 0));
        let far = Words::new("the model produced a tool call: tool not found");
        assert!(!far.has_near("model", "not found", 3));
    }
}
