-- The run drivers' own lane, 'driver', never capacity-limited: before it,
-- drivers queued in 'cloud', so `[lanes] cloud = N` also capped how many
-- runs were driven at once. Every task of a step owner (a run's driver)
-- moves to it.
--
-- SQLite cannot alter a CHECK, so lanes is rebuilt. tasks references it
-- (tasks.lane), and sqlx runs the migration in a transaction, where
-- `PRAGMA foreign_keys` is a no-op (see 0002). `defer_foreign_keys` is not:
-- with it on, the DROP's implicit DELETE only counts the tasks it orphans
-- instead of failing, and re-inserting their lanes into the new table of
-- the same name counts them back, so the count is zero again before the
-- commit checks it (a lane row lost on the way fails the commit, and the
-- migration with it). Nothing is renamed: tasks' foreign key names
-- `lanes`, which is the new table. The pragma ends with the transaction.

PRAGMA defer_foreign_keys = ON;

CREATE TEMP TABLE coderig_0003_lanes AS SELECT name, capacity FROM lanes;
DROP TABLE lanes;
CREATE TABLE lanes (
    name     TEXT PRIMARY KEY CHECK (name IN ('local', 'cloud', 'driver')),
    capacity INTEGER CHECK (capacity IS NULL OR capacity >= 0),
    -- The driver lane is never capped (Store::set_lane_capacity refuses it
    -- first; this holds it for every writer).
    CHECK (name <> 'driver' OR capacity IS NULL)
) STRICT;
INSERT INTO lanes (name, capacity) SELECT name, capacity FROM coderig_0003_lanes;
INSERT INTO lanes (name, capacity) VALUES ('driver', NULL);
DROP TABLE coderig_0003_lanes;

UPDATE tasks SET lane = 'driver' WHERE owner_kind = 'step';

-- No task lost its lane: a violation aborts the migration (the CHECK
-- fails), and the transaction with it.
CREATE TEMP TABLE coderig_0003_check (violations INTEGER NOT NULL CHECK (violations = 0));
INSERT INTO coderig_0003_check SELECT count(*) FROM pragma_foreign_key_check;
DROP TABLE coderig_0003_check;
