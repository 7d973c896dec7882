-- coderig store, PostgreSQL. Times are timestamptz from the database clock;
-- the store reads them as milliseconds (coderig_ms). JSON is jsonb.

CREATE TABLE meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);
-- The store's instance id: the SSE epoch.
INSERT INTO meta (key, value)
VALUES ('instance_id', substr(md5(random()::text || clock_timestamp()::text), 1, 16));

CREATE FUNCTION coderig_ms(t timestamptz) RETURNS bigint
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT (extract(epoch FROM t) * 1000)::bigint $$;

-- A battle or a run.
CREATE TABLE works (
    id         text PRIMARY KEY,
    kind       text NOT NULL CHECK (kind IN ('battle', 'run')),
    status     text NOT NULL,
    data       jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- A contestant (of a battle) or a step (of a run).
CREATE TABLE owners (
    id         text PRIMARY KEY,
    work_id    text NOT NULL REFERENCES works (id) ON DELETE CASCADE,
    kind       text NOT NULL CHECK (kind IN ('contestant', 'step')),
    status     text NOT NULL,
    data       jsonb NOT NULL,
    ordinal    bigint NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (id, kind)
);
CREATE INDEX owners_by_work ON owners (work_id, ordinal);

-- Global lane capacities (NULL = unbounded). A claim in a capped lane
-- locks its row (FOR UPDATE) while it counts and claims.
CREATE TABLE lanes (
    name     text PRIMARY KEY CHECK (name IN ('local', 'cloud')),
    capacity bigint CHECK (capacity IS NULL OR capacity >= 0)
);
INSERT INTO lanes (name, capacity) VALUES ('local', 1), ('cloud', NULL);

-- The queue. A row names its owner (kind + id, one foreign key), so no task
-- exists for an unknown owner. lease_token is set exactly while running.
CREATE TABLE tasks (
    id                 text PRIMARY KEY,
    queue_seq          bigint GENERATED ALWAYS AS IDENTITY,
    work_id            text NOT NULL REFERENCES works (id) ON DELETE CASCADE,
    owner_kind         text NOT NULL,
    owner_id           text NOT NULL,
    lane               text NOT NULL REFERENCES lanes (name),
    state              text NOT NULL CHECK (state IN ('pending', 'running', 'blocked', 'completed', 'failed', 'cancelled')),
    payload            jsonb NOT NULL,
    attempt            bigint NOT NULL DEFAULT 0,
    failures           bigint NOT NULL DEFAULT 0,
    rescues            bigint NOT NULL DEFAULT 0,
    max_attempts       bigint NOT NULL CHECK (max_attempts >= 1),
    backoff_initial_ms bigint NOT NULL,
    backoff_multiplier double precision NOT NULL,
    backoff_max_ms     bigint NOT NULL,
    max_rescues        bigint NOT NULL,
    available_at       timestamptz NOT NULL,
    worker             text,
    lease_token        text,
    lease_expires_at   timestamptz,
    heartbeat_at       timestamptz,
    result             jsonb,
    error              text,
    created_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    started_at         timestamptz,
    finished_at        timestamptz,
    FOREIGN KEY (owner_id, owner_kind) REFERENCES owners (id, kind) ON DELETE CASCADE,
    CHECK ((state = 'running') = (lease_token IS NOT NULL AND lease_expires_at IS NOT NULL))
);
CREATE INDEX tasks_claimable ON tasks (lane, available_at, queue_seq) WHERE state = 'pending';
CREATE INDEX tasks_leased ON tasks (lease_expires_at) WHERE state = 'running';
CREATE INDEX tasks_running_by_lane ON tasks (lane) WHERE state = 'running';
CREATE INDEX tasks_by_work ON tasks (work_id);
CREATE INDEX tasks_by_owner ON tasks (owner_id, owner_kind);

-- The event log. Every insert happens under a transaction-level advisory
-- lock held to commit, so seq order is commit order (a reader that saw N
-- never later finds a committed event below N).
CREATE TABLE events (
    seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind       text NOT NULL,
    work_id    text NOT NULL,
    owner_id   text,
    task_id    text,
    payload    jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX events_by_work ON events (work_id, seq);
