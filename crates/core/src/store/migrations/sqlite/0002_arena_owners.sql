-- Owners of two more kinds, both of battles: a battle's judge ('judge', the
-- owner of its analysis tasks) and its cross-examinations ('cross_exam').
-- Plus the index of Store::list_works.
--
-- SQLite cannot alter a CHECK, so owners is rebuilt (lang_altertable.html,
-- "other kinds of table schema changes"). The documented procedure turns
-- foreign keys off first, but sqlx (0.8) runs every SQLite migration inside
-- a transaction, where `PRAGMA foreign_keys` is a no-op; with them on,
-- DROP TABLE owners would delete every owner row first and cascade into
-- tasks. So tasks is rebuilt too, pointing at the new owners table, before
-- the old owners table is dropped: nothing references it any more when it
-- goes, and no row of tasks is ever deleted. The renames then make the new
-- tables the real ones (with legacy_alter_table off, the default, renaming
-- owners_new rewrites the foreign key of tasks_new to name owners).
-- rowids are copied: tasks are claimed in rowid order (queue order).
-- One transaction: a crash leaves the store as it was before.

CREATE TABLE owners_new (
    id         TEXT PRIMARY KEY,
    work_id    TEXT NOT NULL REFERENCES works (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('contestant', 'step', 'judge', 'cross_exam')),
    status     TEXT NOT NULL,
    data       TEXT NOT NULL,
    ordinal    INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (id, kind)
) STRICT;
INSERT INTO owners_new (rowid, id, work_id, kind, status, data, ordinal, created_at, updated_at)
SELECT rowid, id, work_id, kind, status, data, ordinal, created_at, updated_at FROM owners;

-- The same table as 0001's tasks, its foreign key on owners_new.
CREATE TABLE tasks_new (
    id                 TEXT PRIMARY KEY,
    work_id            TEXT NOT NULL REFERENCES works (id) ON DELETE CASCADE,
    owner_kind         TEXT NOT NULL,
    owner_id           TEXT NOT NULL,
    lane               TEXT NOT NULL REFERENCES lanes (name),
    state              TEXT NOT NULL CHECK (state IN ('pending', 'running', 'blocked', 'completed', 'failed', 'cancelled')),
    payload            TEXT NOT NULL,
    attempt            INTEGER NOT NULL DEFAULT 0,
    failures           INTEGER NOT NULL DEFAULT 0,
    rescues            INTEGER NOT NULL DEFAULT 0,
    max_attempts       INTEGER NOT NULL CHECK (max_attempts >= 1),
    backoff_initial_ms INTEGER NOT NULL,
    backoff_multiplier REAL NOT NULL,
    backoff_max_ms     INTEGER NOT NULL,
    max_rescues        INTEGER NOT NULL,
    available_at       INTEGER NOT NULL,
    worker             TEXT,
    lease_token        TEXT,
    lease_expires_at   INTEGER,
    heartbeat_at       INTEGER,
    result             TEXT,
    error              TEXT,
    created_at         INTEGER NOT NULL,
    started_at         INTEGER,
    finished_at        INTEGER,
    FOREIGN KEY (owner_id, owner_kind) REFERENCES owners_new (id, kind) ON DELETE CASCADE,
    CHECK ((state = 'running') = (lease_token IS NOT NULL AND lease_expires_at IS NOT NULL))
) STRICT;
INSERT INTO tasks_new (rowid, id, work_id, owner_kind, owner_id, lane, state, payload, attempt,
    failures, rescues, max_attempts, backoff_initial_ms, backoff_multiplier, backoff_max_ms,
    max_rescues, available_at, worker, lease_token, lease_expires_at, heartbeat_at, result, error,
    created_at, started_at, finished_at)
SELECT rowid, id, work_id, owner_kind, owner_id, lane, state, payload, attempt,
    failures, rescues, max_attempts, backoff_initial_ms, backoff_multiplier, backoff_max_ms,
    max_rescues, available_at, worker, lease_token, lease_expires_at, heartbeat_at, result, error,
    created_at, started_at, finished_at
FROM tasks;

-- tasks first (nothing references it), then owners (now referenced by
-- nobody): neither drop cascades anywhere. Their indexes go with them.
DROP TABLE tasks;
DROP TABLE owners;
ALTER TABLE owners_new RENAME TO owners;
ALTER TABLE tasks_new RENAME TO tasks;

-- 0001's indexes of both tables (owners and tasks have no triggers).
CREATE INDEX owners_by_work ON owners (work_id, ordinal);
CREATE INDEX tasks_claimable ON tasks (lane, available_at) WHERE state = 'pending';
CREATE INDEX tasks_leased ON tasks (lease_expires_at) WHERE state = 'running';
CREATE INDEX tasks_running_by_lane ON tasks (lane) WHERE state = 'running';
CREATE INDEX tasks_by_work ON tasks (work_id);
CREATE INDEX tasks_by_owner ON tasks (owner_id, owner_kind);

-- Store::list_works: the works of a kind, newest first.
CREATE INDEX works_listed ON works (kind, created_at DESC, id DESC);

-- The copies broke no reference: a violation aborts the migration (the
-- CHECK fails), and the transaction with it.
CREATE TEMP TABLE coderig_0002_check (violations INTEGER NOT NULL CHECK (violations = 0));
INSERT INTO coderig_0002_check SELECT count(*) FROM pragma_foreign_key_check;
DROP TABLE coderig_0002_check;
