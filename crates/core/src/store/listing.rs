//! The pure part of `Store::list_works`: checking a [`WorkFilter`] and the
//! opaque keyset cursor, shared by every backend.
//!
//! A cursor names the last work of a page by its sort key, `(created_at,
//! id)`; the next page is every matching work strictly below that key in
//! the order `created_at` descending, `id` descending. Because the key is
//! unique and the database clock only moves forward, a work created while a
//! client pages through sorts above every cursor already handed out, so it
//! never shifts the works still to come (an offset would).

use super::check_id;
use super::records::{Work, WorkFilter, WorkPage, MAX_WORK_PAGE_LIMIT};
use crate::error::Error;

/// The version tag every cursor starts with, so a later format can tell its
/// own cursors from these.
const CURSOR_TAG: &str = "w1";

/// The sort key a cursor carries: the last work's `created_at` (ms) and id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WorkCursor {
    pub created_at: i64,
    pub id: String,
}

impl WorkCursor {
    /// The cursor as handed out: `w1.<created_at>.<id as hex>` (hex keeps it
    /// safe in a URL query whatever the id holds).
    pub(crate) fn encode(&self) -> String {
        let hex: String = self.id.bytes().map(|b| format!("{b:02x}")).collect();
        format!("{CURSOR_TAG}.{}.{hex}", self.created_at)
    }

    /// Reads a cursor back; `invalid_input` for anything `encode` did not
    /// produce.
    pub(crate) fn decode(cursor: &str) -> Result<WorkCursor, Error> {
        let bad = || {
            Error::invalid_input(
                "a works cursor must be the next_cursor of an earlier page, unchanged",
            )
            .with_detail("path", "cursor")
        };
        let mut parts = cursor.split('.');
        let (Some(CURSOR_TAG), Some(at), Some(hex), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let created_at: i64 = at.parse().map_err(|_| bad())?;
        if hex.is_empty() || hex.len() % 2 != 0 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        let bytes = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).map_err(|_| bad()))
            .collect::<Result<Vec<u8>, Error>>()?;
        let id = String::from_utf8(bytes).map_err(|_| bad())?;
        check_id("work", &id).map_err(|_| bad())?;
        Ok(WorkCursor { created_at, id })
    }
}

/// Checks a works filter as every backend does before it touches the
/// database (`invalid_input`): a limit of 1 to [`MAX_WORK_PAGE_LIMIT`], a
/// data field key of `[A-Za-z0-9_]+` (it goes into a JSON path), a cursor
/// that came from `next_cursor`. Returns the decoded cursor.
pub(crate) fn checked_filter(filter: &WorkFilter) -> Result<Option<WorkCursor>, Error> {
    if filter.limit == 0 || filter.limit > MAX_WORK_PAGE_LIMIT {
        return Err(Error::invalid_input(format!(
            "a works page's limit must be 1 to {MAX_WORK_PAGE_LIMIT}, not {}",
            filter.limit
        ))
        .with_detail("path", "limit"));
    }
    if let Some((key, _)) = &filter.data_field {
        let valid = !key.is_empty()
            && key.len() <= 64
            && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !valid {
            return Err(Error::invalid_input(format!(
                "a works data field is 1 to 64 of A-Z, a-z, 0-9 and _, not {key:?}"
            ))
            .with_detail("path", "data_field"));
        }
    }
    filter.cursor.as_deref().map(WorkCursor::decode).transpose()
}

/// Checks a works filter (`invalid_input`), as `Store::list_works` does
/// before it touches the database; a face may call it to refuse a bad
/// request early.
pub fn check_work_filter(filter: &WorkFilter) -> Result<(), Error> {
    checked_filter(filter).map(|_| ())
}

/// The page from a fetch of up to `limit + 1` works: the extra one, when
/// there, only says that a next page exists (so the last page never hands
/// out a cursor to an empty one).
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn page(mut works: Vec<Work>, limit: u32) -> WorkPage {
    let more = works.len() > limit as usize;
    works.truncate(limit as usize);
    let next_cursor = match works.last() {
        Some(last) if more => Some(
            WorkCursor {
                created_at: last.created_at,
                id: last.id.clone(),
            }
            .encode(),
        ),
        _ => None,
    };
    WorkPage { works, next_cursor }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::records::WorkKind;

    #[test]
    fn a_cursor_reads_back_and_anything_else_is_refused() {
        let cursor = WorkCursor {
            created_at: 1_700_000_000_123,
            id: "b.1:ä/?&".into(),
        };
        let text = cursor.encode();
        assert!(text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.'));
        assert_eq!(WorkCursor::decode(&text).unwrap(), cursor);
        for bad in [
            "",
            "w1",
            "w1.12",
            "w1.x.6231",
            "w2.12.6231",
            "w1.12.623",
            "w1.12.zz",
            "w1.12.6231.00",
            "w1.12.ff",
        ] {
            let e = WorkCursor::decode(bad).unwrap_err();
            assert!(e.message().contains("next_cursor"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn filters_are_checked() {
        let ok = WorkFilter::new(WorkKind::Battle);
        assert_eq!(ok.limit, 50);
        assert!(check_work_filter(&ok).is_ok());
        assert!(check_work_filter(&ok.clone().limit(0)).is_err());
        assert!(check_work_filter(&ok.clone().limit(500)).is_ok());
        assert!(check_work_filter(&ok.clone().limit(501)).is_err());
        assert!(check_work_filter(&ok.clone().data_field("project_2", "/x")).is_ok());
        for key in ["", "a.b", "a'b", "$", "é"] {
            assert!(check_work_filter(&ok.clone().data_field(key, "v")).is_err());
        }
        assert!(check_work_filter(&ok.cursor("nope")).is_err());
    }
}
