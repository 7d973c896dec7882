//! Plain-text tables for people: columns padded to their widest cell.

/// `header` and `rows` as lines, each column padded to its widest cell
/// (counted in characters) and two spaces apart; trailing spaces are
/// trimmed, every line ends with `\n`. Rows shorter than the header leave
/// the missing cells empty; extra cells are dropped.
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, width) in widths.iter().enumerate() {
            let cell = cells.get(i).copied().unwrap_or_default();
            out.push_str(cell);
            if i + 1 < widths.len() {
                let pad = width.saturating_sub(cell.chars().count()) + 2;
                out.push_str(&" ".repeat(pad));
            }
        }
        format!("{}\n", out.trim_end())
    };
    let mut out = line(header.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn columns_align_on_characters() {
        let text = render(
            &["A", "BB", "C"],
            &[vec!["ééé".into(), "x".into(), "".into()], vec!["y".into()]],
        );
        assert_eq!(text, "A    BB  C\nééé  x\ny\n");
    }
}
