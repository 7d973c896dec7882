-- coderig store, SQLite. Times are INTEGER milliseconds since the Unix epoch
-- from the database clock (unixepoch('subsec')). JSON is TEXT.

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;
-- The store's instance id: the SSE epoch.
INSERT INTO meta (key, value) VALUES ('instance_id', lower(hex(randomblob(8))));

-- A battle or a run.
CREATE TABLE works (
    id         TEXT PRIMARY KEY,
    kind       TEXT NOT NULL CHECK (kind IN ('battle', 'run')),
    status     TEXT NOT NULL,
    data       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

-- A contestant (of a battle) or a step (of a run).
CREATE TABLE owners (
    id         TEXT PRIMARY KEY,
    work_id    TEXT NOT NULL REFERENCES works (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('contestant', 'step')),
    status     TEXT NOT NULL,
    data       TEXT NOT NULL,
    ordinal    INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (id, kind)
) STRICT;
CREATE INDEX owners_by_work ON owners (work_id, ordinal);

-- Global lane capacities (NULL = unbounded).
CREATE TABLE lanes (
    name     TEXT PRIMARY KEY CHECK (name IN ('local', 'cloud')),
    capacity INTEGER CHECK (capacity IS NULL OR capacity >= 0)
) STRICT;
INSERT INTO lanes (name, capacity) VALUES ('local', 1), ('cloud', NULL);

-- The queue. A row names its owner (kind + id, one foreign key), so no task
-- exists for an unknown owner. lease_token is set exactly while running.
CREATE TABLE tasks (
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
    FOREIGN KEY (owner_id, owner_kind) REFERENCES owners (id, kind) ON DELETE CASCADE,
    CHECK ((state = 'running') = (lease_token IS NOT NULL AND lease_expires_at IS NOT NULL))
) STRICT;
-- The claim's scan: pending tasks of a lane, oldest first (rowid = queue order).
CREATE INDEX tasks_claimable ON tasks (lane, available_at) WHERE state = 'pending';
-- The rescuer's scan and the lane count.
CREATE INDEX tasks_leased ON tasks (lease_expires_at) WHERE state = 'running';
CREATE INDEX tasks_running_by_lane ON tasks (lane) WHERE state = 'running';
CREATE INDEX tasks_by_work ON tasks (work_id);
CREATE INDEX tasks_by_owner ON tasks (owner_id, owner_kind);

-- The event log. AUTOINCREMENT: a seq is never reused, even after the last
-- row is deleted; the single writer makes seq order commit order.
CREATE TABLE events (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    kind       TEXT NOT NULL,
    work_id    TEXT NOT NULL,
    owner_id   TEXT,
    task_id    TEXT,
    payload    TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX events_by_work ON events (work_id, seq);
