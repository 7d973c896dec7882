//! Tiered location of a needle inside content.
//!
//! Tiers, strongest first, each tried only when the previous found nothing:
//!
//! 1. **exact** — byte-for-byte (an LF needle also matches a CRLF file and
//!    vice versa);
//! 2. **whitespace** — lines compared after trimming and collapsing ASCII
//!    whitespace runs; blank lines are ignored on both sides;
//! 3. **unicode** — typographic punctuation folded (smart quotes, en dash
//!    as `-` and em dash as `--` the way autocorrect makes them, NBSP and
//!    other spaces, ellipsis), first as a substring, then line-wise;
//!    then the same three tiers again with doubled escapes undone (`\n`
//!    written where the file has a line break);
//! 4. **fuzzy** — windows of as many non-blank lines as the needle has,
//!    scored by normalized Levenshtein similarity of their normalised text
//!    (bit-parallel, with a score cutoff). Needles of ≥ 3 lines need the
//!    first and last line equal after trim + fold (the anchor pre-filter),
//!    windows whose length alone rules out the threshold are skipped.
//!
//! At every tier two or more locations give [`MatchKind::Ambiguous`]; the
//! fuzzy tier also refuses when a second window scores within
//! [`FUZZY_MARGIN`] of the best.

use crate::edit::normalize::{
    fold_norm, has_foldable, split_lines, to_lf, unescape, ws_norm, Folded, LineSpan,
};
use crate::names::macros::named_enum;
use memchr::memmem;
use rapidfuzz::distance::levenshtein;
use std::ops::Range;

/// Minimum normalized Levenshtein similarity of a fuzzy match.
pub const FUZZY_THRESHOLD: f64 = 0.85;
/// A second fuzzy window scoring within this margin of the best makes the
/// match ambiguous.
pub const FUZZY_MARGIN: f64 = 0.05;
/// Windows scoring below this are not reported as the nearest candidate.
const NEAREST_FLOOR: f64 = 0.5;

/// The tier at which a needle was found, weakest last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tier {
    /// Byte-for-byte.
    Exact,
    /// Equal after line-trimming / whitespace collapsing.
    Whitespace,
    /// Equal after folding smart quotes, dashes, NBSP, ellipsis (and doubled escapes).
    Unicode,
    /// Line window with normalized Levenshtein similarity ≥ 0.85.
    Fuzzy,
}

named_enum!(Tier, "tier", {
    Exact => "exact",
    Whitespace => "whitespace",
    Unicode => "unicode",
    Fuzzy => "fuzzy",
});

/// Outcome kind of [`locate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatchKind {
    /// Found at the exact tier.
    Exact,
    /// Found at the whitespace tier.
    Whitespace,
    /// Found at the unicode tier.
    Unicode,
    /// Found at the fuzzy tier.
    Fuzzy,
    /// Two or more locations qualified.
    Ambiguous,
    /// Nothing qualified.
    NotFound,
}
named_enum!(MatchKind, "match kind", {
    Exact => "exact",
    Whitespace => "whitespace",
    Unicode => "unicode",
    Fuzzy => "fuzzy",
    Ambiguous => "ambiguous",
    NotFound => "not_found",
});

/// The closest window when nothing qualified: 1-based inclusive lines.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Nearest {
    /// First line (1-based).
    pub first_line: usize,
    /// Last line (1-based, inclusive).
    pub last_line: usize,
    /// Similarity in `[0, 1]`.
    pub score: f64,
}

/// Result of [`locate`].
#[derive(Debug, Clone, PartialEq)]
pub struct Match {
    /// What happened.
    pub kind: MatchKind,
    /// Byte span into the original content, when found.
    pub span: Option<Range<usize>>,
    /// Similarity in `[0, 1]` (1.0 for non-fuzzy tiers), when found.
    pub score: Option<f64>,
    /// Number of candidate locations (1 when found, ≥ 2 when ambiguous, 0 when not found).
    pub count: usize,
    /// 1-based inclusive line ranges of the candidates, when ambiguous.
    pub candidates: Vec<(usize, usize)>,
    /// Closest window, when not found.
    pub nearest: Option<Nearest>,
}

impl Tier {
    fn kind(self) -> MatchKind {
        match self {
            Tier::Exact => MatchKind::Exact,
            Tier::Whitespace => MatchKind::Whitespace,
            Tier::Unicode => MatchKind::Unicode,
            Tier::Fuzzy => MatchKind::Fuzzy,
        }
    }

    /// Rank for "weakest tier": higher is weaker.
    pub(crate) fn rank(self) -> u8 {
        match self {
            Tier::Exact => 0,
            Tier::Whitespace => 1,
            Tier::Unicode => 2,
            Tier::Fuzzy => 3,
        }
    }
}

/// Find where `needle` is in `content`.
///
/// Guarantees: never panics; a found span is a byte range of `content` on
/// char boundaries; `kind` is a tier only when exactly one location
/// qualified at the first tier that found any (otherwise
/// [`MatchKind::Ambiguous`] with `count` ≥ 2 and the 1-based candidate line
/// ranges). `NotFound` carries the closest scored window in `nearest`, if
/// any.
///
/// An empty needle is [`MatchKind::NotFound`] with `count` 0 and no
/// `nearest`: this function is total, for callers that only ask "where".
/// Callers that take the needle from a model or a user should call
/// [`try_locate`](crate::edit::try_locate), which refuses it as invalid
/// input (as
/// [`apply_edit`](crate::edit::apply::apply_edit) refuses an empty `old`).
pub fn locate(content: &str, needle: &str) -> Match {
    match locate_all(content, needle) {
        Outcome::Found(l) if l.spans.len() == 1 && !l.uncertain => Match {
            kind: l.tier.kind(),
            span: Some(l.spans[0].clone()),
            score: Some(l.score),
            count: 1,
            candidates: Vec::new(),
            nearest: None,
        },
        Outcome::Found(l) => Match {
            kind: MatchKind::Ambiguous,
            span: None,
            score: None,
            count: l.spans.len(),
            candidates: l.candidate_lines(content),
            nearest: None,
        },
        Outcome::NotFound(nearest) => Match {
            kind: MatchKind::NotFound,
            span: None,
            score: None,
            count: 0,
            candidates: Vec::new(),
            nearest,
        },
    }
}

/// Every location found at the winning tier, with what `apply` needs to
/// rewrite the replacement.
#[derive(Debug, Clone)]
pub(crate) struct Located {
    pub tier: Tier,
    /// Candidate spans, sorted by start (may overlap for the exact tier).
    pub spans: Vec<Range<usize>>,
    /// Best score (1.0 outside the fuzzy tier).
    pub score: f64,
    /// The needle that matched, with LF line breaks (unescaped when `unescaped`).
    pub needle: String,
    /// The match needed doubled escapes undone.
    pub unescaped: bool,
    /// Fuzzy only: a rival within the margin scored below the threshold, so
    /// not even `replace_all` may apply.
    pub uncertain: bool,
}

impl Located {
    pub(crate) fn candidate_lines(&self, content: &str) -> Vec<(usize, usize)> {
        self.spans
            .iter()
            .map(|s| crate::edit::normalize::line_range(content, s.start, s.end))
            .collect()
    }
}

pub(crate) enum Outcome {
    Found(Located),
    NotFound(Option<Nearest>),
}

/// Lazily computed views of the content shared by the tiers.
struct Ctx<'a> {
    content: &'a str,
    base: usize,
    crlf: bool,
    lines: Option<Vec<LineSpan>>,
    ws: Option<Vec<String>>,
    folded: Option<Vec<String>>,
}

impl<'a> Ctx<'a> {
    fn new(content: &'a str) -> Self {
        let base = if content.starts_with('\u{FEFF}') {
            3
        } else {
            0
        };
        Ctx {
            content,
            base,
            crlf: memmem::find(content.as_bytes(), b"\r\n").is_some(),
            lines: None,
            ws: None,
            folded: None,
        }
    }

    /// Line spans and normalised lines (folded or whitespace-only),
    /// computed on first use.
    fn views(&mut self, folded: bool) -> (&[LineSpan], &[String]) {
        let content = self.content;
        let lines = self
            .lines
            .get_or_insert_with(|| split_lines(content, self.base));
        let slot = if folded {
            &mut self.folded
        } else {
            &mut self.ws
        };
        let norm = slot.get_or_insert_with(|| {
            lines
                .iter()
                .map(|l| {
                    let t = &content[l.start..l.end];
                    if folded {
                        fold_norm(t)
                    } else {
                        ws_norm(t)
                    }
                })
                .collect()
        });
        (lines.as_slice(), norm.as_slice())
    }

    /// The needle as given, then with its line breaks converted to the
    /// file's (LF needle on a CRLF file and vice versa).
    fn eol_variants(&self, needle: &str) -> Vec<String> {
        let mut v = vec![needle.to_string()];
        let lf = to_lf(needle).into_owned();
        if lf != needle {
            v.push(lf.clone());
        }
        if self.crlf && lf.contains('\n') {
            v.push(lf.replace('\n', "\r\n"));
        }
        v
    }
}

/// Occurrences of `needle` in `hay` (non-overlapping), plus one overlapping
/// occurrence when there is exactly one non-overlapping one, so that
/// `"aa"` in `"aaa"` counts as two locations. Offsets relative to `hay`.
fn substring_spans(hay: &[u8], needle: &[u8]) -> Vec<Range<usize>> {
    if needle.is_empty() || needle.len() > hay.len() {
        return Vec::new();
    }
    let finder = memmem::Finder::new(needle);
    let mut spans: Vec<Range<usize>> = finder.find_iter(hay).map(|p| p..p + needle.len()).collect();
    if spans.len() == 1 {
        let p = spans[0].start;
        if let Some(q) = finder.find(&hay[p + 1..]) {
            let q = p + 1 + q;
            if q < spans[0].end {
                spans.push(q..q + needle.len());
            }
        }
    }
    spans
}

/// Spans found by any of the needle's line-break variants: in a file that
/// mixes CRLF and LF, the LF and the CRLF spelling of the needle are two
/// locations, not a first and a fallback.
fn union_sorted(mut spans: Vec<Range<usize>>) -> Vec<Range<usize>> {
    spans.sort_by_key(|r| (r.start, r.end));
    spans.dedup();
    spans
}

fn exact_tier(ctx: &Ctx<'_>, needle: &str) -> Vec<Range<usize>> {
    union_sorted(
        ctx.eol_variants(needle)
            .iter()
            .flat_map(|variant| substring_spans(ctx.content.as_bytes(), variant.as_bytes()))
            .collect(),
    )
}

/// Line-wise match of the non-blank needle lines against consecutive
/// non-blank content lines, under `folded` (unicode) or plain whitespace
/// normalisation. Spans run from the start of the first matched line to the
/// end of the last one (line break excluded).
fn line_tier(ctx: &mut Ctx<'_>, needle_lf: &str, folded: bool) -> Vec<Range<usize>> {
    let nd: Vec<String> = needle_lf
        .split('\n')
        .map(|l| if folded { fold_norm(l) } else { ws_norm(l) })
        .filter(|l| !l.is_empty())
        .collect();
    if nd.is_empty() {
        return Vec::new();
    }
    let (lines, norm) = ctx.views(folded);
    let nb: Vec<usize> = (0..norm.len()).filter(|&i| !norm[i].is_empty()).collect();
    let k = nd.len();
    let mut spans = Vec::new();
    if nb.len() < k {
        return spans;
    }
    for s in 0..=nb.len() - k {
        if (0..k).all(|j| norm[nb[s + j]] == nd[j]) {
            spans.push(lines[nb[s]].start..lines[nb[s + k - 1]].end);
        }
    }
    spans
}

/// Substring match after folding typographic punctuation on both sides.
fn folded_substring_tier(ctx: &Ctx<'_>, needle: &str) -> Vec<Range<usize>> {
    let body = &ctx.content[ctx.base..];
    if !has_foldable(body) && !has_foldable(needle) {
        return Vec::new();
    }
    let folded = Folded::new(body);
    let mut spans = Vec::new();
    for variant in ctx.eol_variants(needle) {
        let fv = crate::edit::normalize::fold(&variant);
        spans.extend(
            substring_spans(folded.text.as_bytes(), fv.as_bytes())
                .into_iter()
                .filter_map(|r| folded.original(r.start, r.end))
                .map(|r| r.start + ctx.base..r.end + ctx.base),
        );
    }
    union_sorted(spans)
}

/// All of exact → whitespace → unicode for one needle; the tier of the
/// first that found anything (`unescaped` reports exact/whitespace hits as
/// unicode: undoing escapes is a unicode-tier repair).
fn strict_tiers(ctx: &mut Ctx<'_>, needle: &str, unescaped: bool) -> Option<Located> {
    let needle_lf = to_lf(needle).into_owned();
    let found = |tier: Tier, spans: Vec<Range<usize>>| Located {
        tier: if unescaped { Tier::Unicode } else { tier },
        spans,
        score: 1.0,
        needle: needle_lf.clone(),
        unescaped,
        uncertain: false,
    };
    let spans = exact_tier(ctx, needle);
    if !spans.is_empty() {
        return Some(found(Tier::Exact, spans));
    }
    let spans = line_tier(ctx, &needle_lf, false);
    if !spans.is_empty() {
        return Some(found(Tier::Whitespace, spans));
    }
    let spans = folded_substring_tier(ctx, needle);
    if !spans.is_empty() {
        return Some(found(Tier::Unicode, spans));
    }
    let spans = line_tier(ctx, &needle_lf, true);
    if !spans.is_empty() {
        return Some(found(Tier::Unicode, spans));
    }
    None
}

/// Result of the fuzzy tier: the located match, or the nearest window.
enum Fuzzy {
    Found(Located),
    Nearest(Option<Nearest>),
}

fn fuzzy_tier(ctx: &mut Ctx<'_>, needle_lf: &str, unescaped: bool) -> Fuzzy {
    let nd: Vec<String> = needle_lf
        .split('\n')
        .map(fold_norm)
        .filter(|l| !l.is_empty())
        .collect();
    let k = nd.len();
    if k == 0 {
        return Fuzzy::Nearest(None);
    }
    let (lines, norm) = ctx.views(true);
    let nb: Vec<usize> = (0..norm.len()).filter(|&i| !norm[i].is_empty()).collect();
    if nb.len() < k {
        return Fuzzy::Nearest(None);
    }
    let needle_text = nd.join("\n");
    let needle_len = needle_text.chars().count();
    let scorer = levenshtein::BatchComparator::new(needle_text.chars());
    // prefix[i] = chars in the first i non-blank lines (+1 per line break).
    let mut prefix = Vec::with_capacity(nb.len() + 1);
    prefix.push(0usize);
    for &i in &nb {
        let last = *prefix.last().unwrap_or(&0);
        prefix.push(last + norm[i].chars().count() + 1);
    }
    let window_text = |s: usize| -> String {
        let mut t = String::new();
        for (j, &i) in nb[s..s + k].iter().enumerate() {
            if j > 0 {
                t.push('\n');
            }
            t.push_str(&norm[i]);
        }
        t
    };
    let mut scored: Vec<(usize, f64)> = Vec::new();
    for s in 0..=nb.len() - k {
        if k >= 3 && (norm[nb[s]] != nd[0] || norm[nb[s + k - 1]] != nd[k - 1]) {
            continue;
        }
        let wlen = prefix[s + k] - prefix[s] - 1;
        // Levenshtein ≥ |len difference|: this bound alone may rule a window out.
        let upper = wlen.min(needle_len) as f64 / wlen.max(needle_len).max(1) as f64;
        if upper < NEAREST_FLOOR {
            continue;
        }
        let args = levenshtein::Args::default().score_cutoff(NEAREST_FLOOR);
        if let Some(score) = scorer.normalized_similarity_with_args(window_text(s).chars(), &args) {
            scored.push((s, score));
        }
    }
    let span_of = |s: usize| lines[nb[s]].start..lines[nb[s + k - 1]].end;
    let best = scored
        .iter()
        .copied()
        .fold(None::<(usize, f64)>, |acc, (s, sc)| match acc {
            Some((_, b)) if b >= sc => acc,
            _ => Some((s, sc)),
        });
    if let Some((bs, bsc)) = best {
        if bsc >= FUZZY_THRESHOLD {
            let close: Vec<(usize, f64)> = scored
                .iter()
                .copied()
                .filter(|&(s, sc)| s == bs || sc >= bsc - FUZZY_MARGIN - 1e-9)
                .collect();
            let uncertain = close.iter().any(|&(_, sc)| sc < FUZZY_THRESHOLD);
            return Fuzzy::Found(Located {
                tier: Tier::Fuzzy,
                spans: close.iter().map(|&(s, _)| span_of(s)).collect(),
                score: bsc,
                needle: needle_lf.to_string(),
                unescaped,
                uncertain,
            });
        }
    }
    // Nothing qualified: report the closest window. Anchored windows were
    // scored above; otherwise look at the windows sharing the most lines
    // with the needle at the same positions.
    let mut nearest = best;
    if k >= 3 {
        let mut agree_best = 0usize;
        let mut agree_at: Vec<usize> = Vec::new();
        for s in 0..=nb.len() - k {
            let a = (0..k).filter(|&j| norm[nb[s + j]] == nd[j]).count();
            if a > agree_best {
                agree_best = a;
                agree_at.clear();
            }
            if a == agree_best && a > 0 && agree_at.len() < 8 {
                agree_at.push(s);
            }
        }
        for s in agree_at {
            let score = scorer.normalized_similarity(window_text(s).chars());
            let better = match nearest {
                Some((_, b)) => score > b,
                None => true,
            };
            if score >= NEAREST_FLOOR && better {
                nearest = Some((s, score));
            }
        }
    }
    Fuzzy::Nearest(nearest.map(|(s, score)| Nearest {
        first_line: nb[s] + 1,
        last_line: nb[s + k - 1] + 1,
        score,
    }))
}

/// Every location of `needle` at the first tier that finds any.
pub(crate) fn locate_all(content: &str, needle: &str) -> Outcome {
    if needle.is_empty() {
        return Outcome::NotFound(None);
    }
    let mut ctx = Ctx::new(content);
    if let Some(l) = strict_tiers(&mut ctx, needle, false) {
        return Outcome::Found(l);
    }
    let unescaped = unescape(needle);
    if let Some(u) = &unescaped {
        if let Some(l) = strict_tiers(&mut ctx, u, true) {
            return Outcome::Found(l);
        }
    }
    let nearest = match fuzzy_tier(&mut ctx, &to_lf(needle), false) {
        Fuzzy::Found(l) => return Outcome::Found(l),
        Fuzzy::Nearest(n) => n,
    };
    // A one-line needle that only becomes several lines once unescaped was
    // probably escaped: score the unescaped text too.
    if let Some(u) = unescaped.filter(|u| !needle.contains('\n') && u.contains('\n')) {
        match fuzzy_tier(&mut ctx, &to_lf(&u), true) {
            Fuzzy::Found(l) => return Outcome::Found(l),
            Fuzzy::Nearest(n) => {
                if n.map(|n| n.score) > nearest.map(|n| n.score) {
                    return Outcome::NotFound(n);
                }
            }
        }
    }
    Outcome::NotFound(nearest)
}
