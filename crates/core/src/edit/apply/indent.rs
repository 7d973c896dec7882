//! How indentation written in the needle maps to the file's.

use crate::edit::normalize::indent_cols;
use std::collections::HashMap;

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
