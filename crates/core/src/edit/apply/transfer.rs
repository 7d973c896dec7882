//! Rewriting `new` line by line into the conventions of the matched
//! region: unchanged lines as the file has them, blank-line gaps kept,
//! indentation mapped, punctuation in the file's style.
//!
//! Indentation, line by line of `new`:
//! - a line left as it was in `old` is the file's line;
//! - a changed line whose indentation the model left as in `old` takes the
//!   file's indentation of the line it changes;
//! - other lines (added, or re-indented by the model) go through the
//!   needle→file [`IndentRule`] when one rule fits every needle line; when
//!   none does (the drift is not uniform), they are shifted by the drift
//!   (needle→file columns) of the nearest line above that took the file's
//!   indentation — above the first such line, by that line's drift; with
//!   none at all, by the first line's — so the block keeps its own
//!   structure and sits where its neighbours are;
//! - when `new` is already at the file's indentation
//!   ([`new_at_file_indent`]), it is read against the needle re-based onto
//!   the file's indentation, so it is not shifted a second time.

use super::indent::{drift, new_at_file_indent, IndentRule};
use super::style::{char_transfer, Style};
use crate::edit::locate::Tier;
use crate::edit::normalize::{fold_norm, indent_of};
use similar::{capture_diff_slices, Algorithm, DiffTag};
use std::collections::HashMap;

fn is_blank(line: &str) -> bool {
    fold_norm(line).is_empty()
}

/// One line of the rewritten `new` while the transfer runs.
struct OutLine {
    text: Text,
    /// The needle line it stands for (unchanged or changed); `None` for
    /// inserted and blank lines.
    needle: Option<usize>,
    /// Needle→file columns when the line took the file's indentation: the
    /// anchors whose drift shifts the lines around them.
    drift: Option<isize>,
}

enum Text {
    Done(String),
    /// The model's indentation, still to be shifted by the local drift.
    Shift {
        indent: String,
        body: String,
    },
}

impl OutLine {
    /// A line written as given that stands for no needle line.
    fn plain(text: String) -> Self {
        OutLine {
            text: Text::Done(text),
            needle: None,
            drift: None,
        }
    }
}

/// Similarity of two lines' normalised text in `[0, 1]`.
fn line_similarity(a: &str, b: &str) -> f64 {
    rapidfuzz::distance::levenshtein::normalized_similarity(
        fold_norm(a).chars(),
        fold_norm(b).chars(),
    )
}

/// Rewrite `new` (LF) for a match of `needle` (LF) on `found` (the file's
/// matched text, LF) at a tolerant `tier`. See the module docs.
pub(super) fn transfer(needle: &str, found: &str, new: &str, tier: Tier) -> String {
    let mut n: Vec<&str> = needle.split('\n').collect();
    let f: Vec<&str> = found.split('\n').collect();
    let mut nl: Vec<&str> = new.split('\n').collect();
    // Blank needle lines before/after the matched lines are not part of the
    // span: drop them, and the same blank lines of `new`.
    let f_first_blank = f.first().is_some_and(|l| is_blank(l));
    let f_last_blank = f.last().is_some_and(|l| is_blank(l));
    while n.len() > 1 && is_blank(n[0]) && !f_first_blank {
        n.remove(0);
        if nl.len() > 1 && is_blank(nl[0]) {
            nl.remove(0);
        }
    }
    while n.len() > 1 && is_blank(n[n.len() - 1]) && !f_last_blank {
        n.pop();
        if nl.len() > 1 && is_blank(nl[nl.len() - 1]) {
            nl.pop();
        }
    }
    let n_nb: Vec<usize> = (0..n.len()).filter(|&i| !is_blank(n[i])).collect();
    let f_nb: Vec<usize> = (0..f.len()).filter(|&i| !is_blank(f[i])).collect();
    if n_nb.len() != f_nb.len() {
        return nl.join("\n");
    }
    let mut pair: Vec<Option<usize>> = vec![None; n.len()];
    for (&a, &b) in n_nb.iter().zip(&f_nb) {
        pair[a] = Some(b);
    }
    let line_pairs: Vec<(&str, &str)> = n_nb
        .iter()
        .zip(&f_nb)
        .map(|(&a, &b)| (n[a], f[b]))
        .collect();
    let indent_pairs: Vec<(&str, &str)> = line_pairs
        .iter()
        .map(|(a, b)| (indent_of(a), indent_of(b)))
        .collect();
    let mut rule = IndentRule::new(&indent_pairs);
    // Lives as long as `n`, which may borrow from it.
    let rebased: Vec<String>;
    if new_at_file_indent(&line_pairs, &nl, &rule) {
        rebased = (0..n.len())
            .map(|i| match pair[i] {
                Some(fi) => format!("{}{}", indent_of(f[fi]), &n[i][indent_of(n[i]).len()..]),
                None => n[i].to_string(),
            })
            .collect();
        n = rebased.iter().map(String::as_str).collect();
        let same: Vec<(&str, &str)> = indent_pairs.iter().map(|&(_, f)| (f, f)).collect();
        rule = IndentRule::new(&same);
    }
    let uniform = rule.is_uniform();
    let style = if matches!(tier, Tier::Unicode | Tier::Fuzzy) {
        Style::from_pairs(&line_pairs)
    } else {
        Style::default()
    };
    let char_level = matches!(tier, Tier::Unicode | Tier::Fuzzy);

    // Indentation the model chose: mapped by the rule when one fits, else
    // shifted once the drift of the nearest anchor is known.
    let reindent = |indent: &str, body: String| -> Text {
        if uniform {
            Text::Done(rule.apply(indent) + &body)
        } else {
            Text::Shift {
                indent: indent.to_string(),
                body,
            }
        }
    };
    let inserted = |line: &str| -> OutLine {
        if is_blank(line) {
            return OutLine::plain(line.to_string());
        }
        let ind = indent_of(line);
        let body: Vec<char> = line[ind.len()..].chars().collect();
        let body = if style.active() {
            let mut b = String::new();
            style.push(&mut b, &body);
            b
        } else {
            body.into_iter().collect()
        };
        OutLine {
            text: reindent(ind, body),
            needle: None,
            drift: None,
        }
    };
    let changed = |line: &str, old: &str, file: &str, i: usize| -> OutLine {
        let (ni, oi, fi) = (indent_of(line), indent_of(old), indent_of(file));
        let body = if char_level {
            char_transfer(
                &line[ni.len()..],
                &old[oi.len()..],
                &file[fi.len()..],
                &style,
            )
        } else {
            line[ni.len()..].to_string()
        };
        if ni == oi {
            OutLine {
                text: Text::Done(format!("{fi}{body}")),
                needle: Some(i),
                drift: Some(drift(oi, fi)),
            }
        } else {
            OutLine {
                text: reindent(ni, body),
                needle: Some(i),
                drift: None,
            }
        }
    };

    let mut out: Vec<OutLine> = Vec::with_capacity(nl.len());
    for op in capture_diff_slices(Algorithm::Myers, &n, &nl) {
        let (tag, o, b) = op.as_tag_tuple();
        match tag {
            DiffTag::Equal => {
                for k in 0..o.len() {
                    let i = o.start + k;
                    out.push(match pair[i] {
                        Some(fi) => OutLine {
                            text: Text::Done(f[fi].to_string()),
                            needle: Some(i),
                            drift: Some(drift(indent_of(n[i]), indent_of(f[fi]))),
                        },
                        None => OutLine::plain(nl[b.start + k].to_string()),
                    });
                }
            }
            DiffTag::Delete => {}
            DiffTag::Insert => out.extend(nl[b].iter().map(|l| inserted(l))),
            DiffTag::Replace => {
                // Pair each new line with the most similar remaining old line
                // of the hunk (in order); unpaired new lines are insertions.
                let mut next = o.start;
                for &line in &nl[b] {
                    let best = if is_blank(line) {
                        None
                    } else {
                        (next..o.end)
                            .filter(|&i| pair[i].is_some())
                            .map(|i| (i, line_similarity(line, n[i])))
                            .filter(|&(_, s)| s >= 0.5)
                            .fold(None::<(usize, f64)>, |acc, (i, s)| match acc {
                                Some((_, bs)) if bs >= s => acc,
                                _ => Some((i, s)),
                            })
                    };
                    match best.and_then(|(i, _)| pair[i].map(|fi| (i, fi))) {
                        Some((i, fi)) => {
                            out.push(changed(line, n[i], f[fi], i));
                            next = i + 1;
                        }
                        None => out.push(inserted(line)),
                    }
                }
            }
        }
    }
    // Lines before the first anchor take its drift (the nearest one); with
    // no anchor at all, the first line's.
    let mut current = out.iter().find_map(|l| l.drift).unwrap_or_else(|| {
        n_nb.first()
            .zip(f_nb.first())
            .map_or(0, |(&a, &b)| drift(indent_of(n[a]), indent_of(f[b])))
    });
    let out: Vec<(String, Option<usize>)> = out
        .into_iter()
        .map(|l| {
            if let Some(d) = l.drift {
                current = d;
            }
            let text = match l.text {
                Text::Done(t) => t,
                Text::Shift { indent, body } => rule.shift(&indent, current) + &body,
            };
            (text, l.needle)
        })
        .collect();
    keep_file_gaps(&out, &n_nb, &f_nb, &f).join("\n")
}

/// The blank lines between two consecutive needle lines are the model's
/// spelling of the file's blank lines there (the tolerant tiers ignore
/// blank lines, so a model that left one out of `old` still matched): where
/// `new` keeps the needle's gap between them unchanged, write the file's gap
/// instead, so that blank lines the model did not touch are neither dropped
/// nor added.
fn keep_file_gaps(
    out: &[(String, Option<usize>)],
    n_nb: &[usize],
    f_nb: &[usize],
    f: &[&str],
) -> Vec<String> {
    let rank: HashMap<usize, usize> = n_nb.iter().enumerate().map(|(j, &i)| (i, j)).collect();
    let mut result: Vec<String> = Vec::with_capacity(out.len());
    let mut idx = 0;
    while idx < out.len() {
        result.push(out[idx].0.clone());
        let mut next = idx + 1;
        while next < out.len() && out[next].1.is_none() && is_blank(&out[next].0) {
            next += 1;
        }
        let ranked = |l: Option<usize>| l.and_then(|i| rank.get(&i).map(|&j| (i, j)));
        if let (Some((a, ja)), Some((b, jb))) =
            (ranked(out[idx].1), ranked(out.get(next).and_then(|l| l.1)))
        {
            if jb == ja + 1 && next - idx - 1 == b - a - 1 {
                result.extend(f[f_nb[ja] + 1..f_nb[jb]].iter().map(|l| l.to_string()));
                idx = next;
                continue;
            }
        }
        idx += 1;
    }
    result
}
