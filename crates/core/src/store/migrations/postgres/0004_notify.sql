-- Other servers sharing this database learn of new events at once instead
-- of at their next poll: every statement that appends events signals the
-- schema's channel. PostgreSQL delivers a transaction's notifications at
-- its commit (none for a rollback) and folds identical ones into one, so a
-- write transaction sends at most one payload-free notification, however
-- many events it appended. Listeners then read the log themselves
-- (Store::events_after): the notification carries no data to lose.
--
-- A session with `coderig.notify = off` (PostgresOptions::notify = false)
-- sends none: the benchmark's baseline, and writers whose readers poll.
-- The channel: 'coderig:' and the schema, cut to PostgreSQL's 63 bytes
-- (PostgresStore computes the same name for its LISTEN).
CREATE FUNCTION coderig_notify_events() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF coalesce(current_setting('coderig.notify', true), '') <> 'off' THEN
        PERFORM pg_notify(left('coderig:' || TG_TABLE_SCHEMA, 63), '');
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER events_notify
    AFTER INSERT ON events
    FOR EACH STATEMENT
    EXECUTE FUNCTION coderig_notify_events();
