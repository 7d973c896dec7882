//! The SQLite queries of the arena runner's additions: `list_works`,
//! `add_owner`, `owner` (kept out of `sqlite.rs` to keep it readable).

use super::{insert_event, insert_task, is_busy, SqliteStore, BACKEND, NOW};
use crate::error::Error;
use crate::store::listing::{checked_filter, page};
use crate::store::records::*;
use crate::store::sql::*;
use crate::store::{check_new_owner, check_owner_kind};
// The transaction macros name these types.
use sqlx::sqlite::SqliteConnection;
use std::time::{Duration, Instant};

const OWNER_COLUMNS: &str = "id, work_id, kind, status, data, updated_at";

pub(super) async fn list_works(
    store: &SqliteStore,
    filter: &WorkFilter,
) -> Result<WorkPage, Error> {
    let cursor = checked_filter(filter)?;
    let statuses = serde_json::Value::from(filter.statuses.clone()).to_string();
    let (key, value) = match &filter.data_field {
        Some((key, value)) => (Some(key.as_str()), Some(value.as_str())),
        None => (None, None),
    };
    // One more than the page: whether it exists says if there is a next
    // page, so the last page never hands out a cursor to an empty one.
    let fetch = i64::from(filter.limit) + 1;
    let (cursor, statuses) = (&cursor, &statuses);
    let works = read_tx!(store, |conn| {
        // The key is [A-Za-z0-9_]+ (checked): quoted, it is one JSON path
        // label. json_type 'text' keeps numbers from matching their digits.
        let found = sqlx::query(
            "SELECT id, kind, status, data, created_at, updated_at FROM works \
             WHERE kind = ?1 \
               AND (json_array_length(?2) = 0 OR status IN (SELECT value FROM json_each(?2))) \
               AND (?3 IS NULL OR (json_type(data, '$.\"' || ?3 || '\"') = 'text' \
                    AND json_extract(data, '$.\"' || ?3 || '\"') = ?4)) \
               AND (?5 IS NULL OR (created_at, id) < (?5, ?6)) \
             ORDER BY created_at DESC, id DESC LIMIT ?7",
        )
        .bind(filter.kind.as_str())
        .bind(statuses)
        .bind(key)
        .bind(value)
        .bind(cursor.as_ref().map(|c| c.created_at))
        .bind(cursor.as_ref().map(|c| c.id.as_str()))
        .bind(fetch)
        .fetch_all(&mut *conn)
        .await?;
        rows(&found, work_from_row)?
    })?;
    Ok(page(works, filter.limit))
}

pub(super) async fn add_owner(
    store: &SqliteStore,
    work_id: &str,
    owner: &NewOwner,
    tasks: &[TaskSpec],
    event: Option<&NewEvent>,
) -> Result<Option<EventRecord>, Error> {
    check_new_owner(work_id, owner, tasks)?;
    if let Some(event) = event {
        event.check()?;
    }
    write_tx!(store, |tx| {
        let Some(row) = sqlx::query(
            "SELECT kind, (SELECT coalesce(max(ordinal) + 1, 0) FROM owners \
                 WHERE work_id = ?1) AS next_ordinal \
             FROM works WHERE id = ?1",
        )
        .bind(work_id)
        .fetch_optional(&mut *tx)
        .await?
        else {
            return Err(Error::not_found_id("battle or run", work_id).into());
        };
        check_owner_kind(row.name("kind")?, owner)?;
        sqlx::query(&format!(
            "INSERT INTO owners (id, work_id, kind, status, data, ordinal, created_at, \
             updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, {NOW}, {NOW})"
        ))
        .bind(&owner.id)
        .bind(work_id)
        .bind(owner.kind.as_str())
        .bind(&owner.status)
        .bind(json_text(&owner.data))
        .bind(row.int("next_ordinal")?)
        .execute(&mut *tx)
        .await
        .map_err(|e| on_duplicate(e, owner.kind.as_str(), &owner.id))?;
        for spec in tasks {
            insert_task(tx, spec).await?;
        }
        match event {
            None => None,
            Some(event) => Some(insert_event(tx, work_id, Some(&owner.id), None, event).await?),
        }
    })
}

pub(super) async fn owner(store: &SqliteStore, id: &str) -> Result<Owner, Error> {
    read_tx!(store, |conn| {
        let row = sqlx::query(&format!("SELECT {OWNER_COLUMNS} FROM owners WHERE id = ?1"))
            .bind(id)
            .fetch_optional(&mut *conn)
            .await?;
        match row {
            Some(row) => owner_from_row(&row)?,
            None => return Err(Error::not_found_id("owner", id).into()),
        }
    })
}
