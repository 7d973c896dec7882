//! Plain text for people: tables with columns padded to their widest cell,
//! durations that read like a clock, text cut to a width.

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

/// Now, in milliseconds since the Unix epoch (what the stored times are).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// `16 ms`, `1.2 s`, `3m05s`.
pub fn millis(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{}m{:02}s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

/// `text` cut to `max` characters (an ellipsis marks the cut).
pub fn short(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::{millis, render, short};

    #[test]
    fn durations_read_like_a_clock() {
        assert_eq!(millis(16), "16 ms");
        assert_eq!(millis(1234), "1.2 s");
        assert_eq!(millis(185_000), "3m05s");
    }

    #[test]
    fn short_cuts_on_characters() {
        assert_eq!(short("abc", 3), "abc");
        assert_eq!(short("ééééé", 3), "éé…");
    }

    #[test]
    fn columns_align_on_characters() {
        let text = render(
            &["A", "BB", "C"],
            &[vec!["ééé".into(), "x".into(), "".into()], vec!["y".into()]],
        );
        assert_eq!(text, "A    BB  C\nééé  x\ny\n");
    }
}
