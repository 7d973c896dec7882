//! How indentation written in the needle maps to the file's.
//!
//! When one rule maps every needle line's indentation onto the file's (the
//! same, a constant column shift, or level for level in another unit), the
//! lines of `new` are re-indented by that rule. When none does (the model
//! flattened `old`, or drifted by different amounts on different lines),
//! there is no mapping to trust, so the transfer shifts each line by the
//! drift of its neighbours instead ([`IndentRule::shift`]). Either way, a
//! `new` that is already at the file's indentation is recognised first
//! ([`new_at_file_indent`]) and not shifted at all.

use crate::edit::normalize::{indent_cols, indent_of, ws_norm};
use similar::{capture_diff_slices, Algorithm, DiffTag};
use std::collections::{HashMap, HashSet};

/// How indentation written in the needle maps to the file's.
pub(super) struct IndentRule {
    identity: bool,
    map: HashMap<String, Option<String>>,
    /// (tab width, column shift)
    linear: Option<(usize, isize)>,
    /// When no column shift fits: (needle indent unit, file indent unit,
    /// level shift), for a needle indented by another unit than the file
    /// (2 spaces per level where the file has 4).
    levels: Option<(usize, usize, isize)>,
    tabs: bool,
}

/// Tab width assumed when comparing indentation units.
const LEVEL_TAB: usize = 4;

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The indentation unit of some indents (in columns): the gcd of the
/// non-zero widths, or `None` when all are zero.
fn indent_unit<'s>(indents: impl Iterator<Item = &'s str>) -> Option<usize> {
    let unit = indents.map(|i| indent_cols(i, LEVEL_TAB)).fold(0, gcd);
    (unit > 0).then_some(unit)
}

impl IndentRule {
    pub(super) fn new(pairs: &[(&str, &str)]) -> Self {
        let identity = pairs.iter().all(|(n, f)| n == f);
        let mut map: HashMap<String, Option<String>> = HashMap::new();
        for (n, f) in pairs {
            let e = map
                .entry(n.to_string())
                .or_insert_with(|| Some(f.to_string()));
            if e.as_deref() != Some(*f) {
                *e = None;
            }
        }
        let linear = [4usize, 2, 8, 3].into_iter().find_map(|w| {
            let mut d = None;
            for (n, f) in pairs {
                let x = indent_cols(f, w) as isize - indent_cols(n, w) as isize;
                match d {
                    None => d = Some(x),
                    Some(y) if y != x => return None,
                    _ => {}
                }
            }
            d.map(|d| (w, d))
        });
        let levels = if linear.is_none() {
            Self::level_rule(pairs)
        } else {
            None
        };
        let tab_lines = pairs.iter().filter(|(_, f)| f.starts_with('\t')).count();
        let space_lines = pairs.iter().filter(|(_, f)| f.starts_with(' ')).count();
        IndentRule {
            identity,
            map,
            linear,
            levels,
            tabs: tab_lines > space_lines,
        }
    }

    /// Needle and file indented in different units, level for level (plus
    /// a constant number of levels): `(needle unit, file unit, level shift)`.
    fn level_rule(pairs: &[(&str, &str)]) -> Option<(usize, usize, isize)> {
        let un = indent_unit(pairs.iter().map(|p| p.0))?;
        let uf = indent_unit(pairs.iter().map(|p| p.1))?;
        let mut shift = None;
        for (n, f) in pairs {
            let x = (indent_cols(f, LEVEL_TAB) / uf) as isize
                - (indent_cols(n, LEVEL_TAB) / un) as isize;
            match shift {
                None => shift = Some(x),
                Some(y) if y != x => return None,
                _ => {}
            }
        }
        shift.map(|d| (un, uf, d))
    }

    /// Whether one rule maps every needle indentation onto the file's; when
    /// not, [`apply`](Self::apply) has no evidence for unseen indents.
    pub(super) fn is_uniform(&self) -> bool {
        self.identity || self.linear.is_some() || self.levels.is_some()
    }

    /// `indent` moved by `drift` columns (never left of column 0), written
    /// with the file's indent character.
    pub(super) fn shift(&self, indent: &str, drift: isize) -> String {
        let cols = (indent_cols(indent, LEVEL_TAB) as isize + drift).max(0) as usize;
        self.write_cols(cols, LEVEL_TAB)
    }

    fn write_cols(&self, cols: usize, w: usize) -> String {
        if self.tabs {
            format!("{}{}", "\t".repeat(cols / w), " ".repeat(cols % w))
        } else {
            " ".repeat(cols)
        }
    }

    pub(super) fn apply(&self, indent: &str) -> String {
        if self.identity {
            return indent.to_string();
        }
        if let Some(Some(f)) = self.map.get(indent) {
            return f.clone();
        }
        if let Some((w, d)) = self.linear {
            let cols = (indent_cols(indent, w) as isize + d).max(0) as usize;
            return self.write_cols(cols, w);
        }
        if let Some((un, uf, d)) = self.levels {
            let cols = indent_cols(indent, LEVEL_TAB);
            if cols.is_multiple_of(un) {
                let level = ((cols / un) as isize + d).max(0) as usize;
                return self.write_cols(level * uf, LEVEL_TAB);
            }
        }
        indent.to_string()
    }
}

/// Columns from `needle_indent` to `file_indent` (positive: the file is
/// indented deeper).
pub(super) fn drift(needle_indent: &str, file_indent: &str) -> isize {
    indent_cols(file_indent, LEVEL_TAB) as isize - indent_cols(needle_indent, LEVEL_TAB) as isize
}

/// Whether `new` is already written at the file's indentation rather than
/// at the needle's, so that re-indenting it would shift it twice.
///
/// `pairs` are the non-blank needle lines with the file lines they matched.
/// Evidence: the lines `new` kept from the needle (equal after collapsing
/// whitespace) — each one indented like its file line votes for the file,
/// each one indented like its needle line for the needle; when `new` kept
/// none, its first non-blank line against the first pair. The file must win
/// the vote, and every non-blank line of `new` must also be a plausible
/// indentation in the file: not left of the region, and either an
/// indentation the region uses or a whole number of the region's indent
/// units (at most 4 columns) in the file's indent character. That last
/// check keeps a model that nests by 2 spaces where the file uses 4 from
/// reading as "already at the file's indentation" by coincidence.
pub(super) fn new_at_file_indent(pairs: &[(&str, &str)], new: &[&str], rule: &IndentRule) -> bool {
    if rule.identity || pairs.is_empty() {
        return false;
    }
    let new_nb: Vec<&str> = new
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty())
        .collect();
    if new_nb.is_empty() {
        return false;
    }
    let norm_needle: Vec<String> = pairs.iter().map(|(n, _)| ws_norm(n)).collect();
    let norm_new: Vec<String> = new_nb.iter().map(|l| ws_norm(l)).collect();
    let mut kept: Vec<(usize, usize)> = Vec::new();
    for op in capture_diff_slices(Algorithm::Myers, &norm_needle, &norm_new) {
        let (tag, a, b) = op.as_tag_tuple();
        if tag == DiffTag::Equal {
            kept.extend(a.zip(b));
        }
    }
    if kept.is_empty() {
        kept.push((0, 0));
    }
    let (mut file_votes, mut needle_votes) = (0usize, 0usize);
    for &(i, j) in &kept {
        let w = indent_of(new_nb[j]);
        file_votes += usize::from(w == indent_of(pairs[i].1));
        needle_votes += usize::from(w == indent_of(pairs[i].0));
    }
    if file_votes <= needle_votes {
        return false;
    }
    let region: HashSet<&str> = pairs.iter().map(|(_, f)| indent_of(f)).collect();
    // A region indented only at 8 and 16 says its unit divides 8, not that
    // it is 8: cap it at the usual unit.
    let unit = indent_unit(region.iter().copied()).map(|u| u.min(LEVEL_TAB));
    let leftmost = region
        .iter()
        .map(|i| indent_cols(i, LEVEL_TAB))
        .min()
        .unwrap_or(0);
    new_nb.iter().all(|line| {
        let w = indent_of(line);
        let cols = indent_cols(w, LEVEL_TAB);
        let in_file_char = if rule.tabs {
            !w.contains(' ')
        } else {
            !w.contains('\t')
        };
        cols >= leftmost
            && (region.contains(w)
                || (in_file_char && unit.is_some_and(|u| cols.is_multiple_of(u))))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indent_rule_table() {
        // (needle→file indent pairs, indent of a new line, expected file indent)
        type Pairs = &'static [(&'static str, &'static str)];
        let cases: &[(Pairs, &str, &str)] = &[
            (&[("", ""), ("  ", "  ")], "    ", "    "),
            (
                &[("    ", ""), ("        ", "    ")],
                "            ",
                "        ",
            ),
            (&[("", "  "), ("  ", "    ")], "    ", "      "),
            (
                &[("    ", "\t"), ("        ", "\t\t")],
                "            ",
                "\t\t\t",
            ),
            (
                &[("\t", "    "), ("\t\t", "        ")],
                "\t\t\t",
                "            ",
            ),
            (&[("\t", "  "), ("\t\t", "    ")], "\t\t\t", "      "),
            (&[("\t", "  "), ("\t\t\t", "      ")], "\t ", "   "),
            (&[("    ", "")], "  ", ""),
            // 2 spaces per level in the needle, 4 in the file.
            (&[("", ""), ("  ", "    ")], "    ", "        "),
            (
                &[("  ", "    "), ("    ", "        ")],
                "      ",
                "            ",
            ),
            // ... and one level deeper in the file.
            (&[("", "    "), ("  ", "        ")], "    ", "            "),
            // 4 spaces per level in the needle, 2 in the file.
            (&[("", ""), ("    ", "  ")], "        ", "    "),
            // Not a whole number of needle levels: left as written.
            (&[("", ""), ("    ", "  ")], "  ", "  "),
        ];
        for (pairs, new, want) in cases {
            let rule = IndentRule::new(pairs);
            assert_eq!(rule.apply(new), *want, "{pairs:?} {new:?}");
        }
    }
}
