-- The run drivers' own lane, 'driver', never capacity-limited: before it,
-- drivers queued in 'cloud', so `[lanes] cloud = N` also capped how many
-- runs were driven at once. Every task of a step owner (a run's driver)
-- moves to it. (sqlx runs this in one transaction.)

-- 0001 declared the CHECK on the column, which PostgreSQL names
-- lanes_name_check; no IF EXISTS, so a differently named one fails here
-- instead of leaving the old CHECK in force.
ALTER TABLE lanes DROP CONSTRAINT lanes_name_check;
ALTER TABLE lanes ADD CONSTRAINT lanes_name_check
    CHECK (name IN ('local', 'cloud', 'driver'));
-- The driver lane is never capped (Store::set_lane_capacity refuses it
-- first; this holds it for every writer).
ALTER TABLE lanes ADD CONSTRAINT lanes_driver_unbounded
    CHECK (name <> 'driver' OR capacity IS NULL);
INSERT INTO lanes (name, capacity) VALUES ('driver', NULL);

UPDATE tasks SET lane = 'driver' WHERE owner_kind = 'step';
