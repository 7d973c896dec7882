//! The PostgreSQL queries of the arena runner's additions: `list_works`,
//! `add_owner`, `owner` (kept out of `postgres.rs` to keep it readable).

use super::{insert_event, insert_task, is_retryable, PostgresStore, BACKEND, READ, WRITE};
use crate::error::Error;
use crate::store::listing::{checked_filter, page};
use crate::store::records::*;
use crate::store::sql::*;
use crate::store::{check_new_owner, check_owner_kind};
// The transaction macro names these types.
use sqlx::postgres::PgConnection;
use std::time::Duration;

const OWNER_COLUMNS: &str = "id, work_id, kind, status, data::text AS data, \
    coderig_ms(updated_at) AS updated_at";

pub(super) async fn list_works(
    store: &PostgresStore,
    filter: &WorkFilter,
) -> Result<WorkPage, Error> {
    let cursor = checked_filter(filter)?;
    let (key, value) = match &filter.data_field {
        Some((key, value)) => (Some(key.as_str()), Some(value.as_str())),
        None => (None, None),
    };
    // One more than the page: see `page`.
    let fetch = i64::from(filter.limit) + 1;
    let cursor = &cursor;
    let works = pg_tx!(store, READ, |tx| {
        // Ordered by the milliseconds (coderig_ms_key, migration 0002), the
        // value `created_at` shows and the cursor carries, so the cursor is
        // exact. jsonb_typeof 'string' keeps numbers from matching their
        // digits, as on SQLite.
        let found = sqlx::query(
            "SELECT id, kind, status, data::text AS data, coderig_ms(created_at) AS created_at, \
                 coderig_ms(updated_at) AS updated_at FROM works \
             WHERE kind = $1 \
               AND (cardinality($2::text[]) = 0 OR status = ANY($2::text[])) \
               AND ($3::text IS NULL OR (jsonb_typeof(data -> $3::text) = 'string' \
                    AND data ->> $3::text = $4::text)) \
               AND ($5::bigint IS NULL \
                    OR (coderig_ms_key(created_at), id) < ($5::bigint, $6::text)) \
             ORDER BY coderig_ms_key(created_at) DESC, id DESC LIMIT $7",
        )
        .bind(filter.kind.as_str())
        .bind(&filter.statuses)
        .bind(key)
        .bind(value)
        .bind(cursor.as_ref().map(|c| c.created_at))
        .bind(cursor.as_ref().map(|c| c.id.as_str()))
        .bind(fetch)
        .fetch_all(&mut *tx)
        .await?;
        rows(&found, work_from_row)?
    })?;
    Ok(page(works, filter.limit))
}

pub(super) async fn add_owner(
    store: &PostgresStore,
    work_id: &str,
    owner: &NewOwner,
    tasks: &[TaskSpec],
    event: Option<&NewEvent>,
) -> Result<Option<EventRecord>, Error> {
    check_new_owner(work_id, owner, tasks)?;
    if let Some(event) = event {
        event.check()?;
    }
    let lock = store.event_lock;
    pg_tx!(store, WRITE, |tx| {
        // The work row locked: two owners added at once get distinct
        // ordinals (and a concurrent transition of the work waits).
        let Some(row) = sqlx::query("SELECT kind FROM works WHERE id = $1 FOR UPDATE")
            .bind(work_id)
            .fetch_optional(&mut *tx)
            .await?
        else {
            return Err(Error::not_found_id("battle or run", work_id).into());
        };
        check_owner_kind(row.name("kind")?, owner)?;
        sqlx::query(
            "INSERT INTO owners (id, work_id, kind, status, data, ordinal) \
             SELECT $1, $2, $3, $4, $5::jsonb, coalesce(max(ordinal) + 1, 0) \
             FROM owners WHERE work_id = $2",
        )
        .bind(&owner.id)
        .bind(work_id)
        .bind(owner.kind.as_str())
        .bind(&owner.status)
        .bind(json_text(&owner.data))
        .execute(&mut *tx)
        .await
        .map_err(|e| on_duplicate(e, owner.kind.as_str(), &owner.id))?;
        for spec in tasks {
            insert_task(tx, spec).await?;
        }
        match event {
            None => None,
            Some(event) => {
                Some(insert_event(tx, lock, work_id, Some(&owner.id), None, event).await?)
            }
        }
    })
}

pub(super) async fn owner(store: &PostgresStore, id: &str) -> Result<Owner, Error> {
    pg_tx!(store, READ, |tx| {
        let row = sqlx::query(&format!("SELECT {OWNER_COLUMNS} FROM owners WHERE id = $1"))
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
        match row {
            Some(row) => owner_from_row(&row)?,
            None => return Err(Error::not_found_id("owner", id).into()),
        }
    })
}
