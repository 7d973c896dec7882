-- Owners of two more kinds, both of battles: a battle's judge ('judge', the
-- owner of its analysis tasks) and its cross-examinations ('cross_exam').
-- Plus the index of Store::list_works. (sqlx runs this in one transaction.)

-- 0001 declared the CHECK on the column, which PostgreSQL names
-- owners_kind_check; no IF EXISTS, so a differently named one fails here
-- instead of leaving the old CHECK in force.
ALTER TABLE owners DROP CONSTRAINT owners_kind_check;
ALTER TABLE owners ADD CONSTRAINT owners_kind_check
    CHECK (kind IN ('contestant', 'step', 'judge', 'cross_exam'));

-- Store::list_works orders by the milliseconds every face sees
-- (coderig_ms), not by the microseconds underneath, so that two works of
-- the same millisecond come in id order on both backends and a cursor (in
-- milliseconds) is exact. An index needs an IMMUTABLE function: the epoch
-- of a timestamptz does not depend on the time zone, so this one is (and
-- coderig_ms itself stays STABLE, so that it is still inlined elsewhere).
CREATE FUNCTION coderig_ms_key(t timestamptz) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT (extract(epoch FROM t) * 1000)::bigint $$;
CREATE INDEX works_listed ON works (kind, coderig_ms_key(created_at) DESC, id DESC);
