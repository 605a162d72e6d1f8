-- The feed horizon ignores the read model's own transactions.
--
-- feed_horizon() (00004) is the smallest id among the in-progress
-- transactions that can still add events to this database's feed. Every
-- write transaction of this database counted, so a rebuild writing its
-- shadow tables, or one slow projector batch, held every live projector
-- back until it ended (issue 17, item 4). Those transactions write the read
-- model and never the events table, so they cannot commit an event late: the
-- horizon may pass them.
--
-- Which connections may be passed: those that carry the reserved
-- application_name 'onceledger-readmodel' (adapters/postgres
-- ReadModelApplicationName). onceledger sets it as a startup parameter on
-- the pools of the read model (projectors, rebuild, checkpoints) and on no
-- other pool, and never changes it afterwards.
--
-- Why this is safe, i.e. why no transaction that can still write an event is
-- ever passed:
--
-- 1. The trigger below refuses any INSERT or UPDATE of events by a
--    connection whose application_name is the reserved one at that moment.
--    So a transaction passed over because its connection carried the mark
--    when a reader looked can write events only if it changes its own
--    application_name inside the transaction (SET application_name) and
--    then writes. onceledger never issues SET application_name; the name is
--    reserved for connections that never write events, and nothing else may
--    use it. A client that deliberately took the name and dropped it again
--    to write events would be lying about what it does -- but it has no
--    power it did not have before: anyone allowed to insert into events can
--    already write any tx_id value and break the feed order, so the trust
--    boundary stays the role that may write events, and the name asks
--    nothing more of such a client than the feed already does.
-- 2. The rest of the argument of 00004 is unchanged: the in-progress list
--    comes from the statement's own snapshot, and pg_stat_activity is read
--    after it. A transaction that ended in between is simply not passed
--    (errs low). An xid is never reused by another backend while it can
--    still be in a snapshot, so the activity row naming x is x's own. An
--    xid is passed only if every backend showing it (a leader and its
--    parallel workers) is marked or belongs to another database. Prepared
--    transactions have no backend and are never passed (they cannot insert
--    anyway). Transactions that start later get ids >= xmax.
-- 3. Only the horizon moves: the order of the feed, (tx_id, position), and
--    the reader's rule "tx_id below the horizon" are unchanged, so the
--    adversarial late-commit test (an unmarked connection that took its xid
--    early and appends after a later append committed) still holds the feed.
--
-- The mark is checked where it is cheap: the trigger's WHEN compares one
-- setting per statement; its function runs only on a marked connection.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION feed_horizon() RETURNS bigint
LANGUAGE sql STABLE PARALLEL RESTRICTED AS $$
    SELECT LEAST(
        pg_snapshot_xmax(snap.s)::text::bigint,
        (SELECT min(x::text::bigint)
         FROM pg_snapshot_xip(snap.s) AS x
         WHERE NOT coalesce((
             SELECT bool_and((a.datname IS NOT NULL AND a.datname <> current_database())
                             OR a.application_name = 'onceledger-readmodel')
             FROM pg_stat_activity a
             WHERE a.backend_xid = x::xid), false)))
    FROM (SELECT pg_current_snapshot() AS s) AS snap
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION events_refuse_readmodel_writes() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'a connection named onceledger-readmodel never writes events (the feed horizon passes its transactions)'
        USING ERRCODE = 'insufficient_privilege',
              HINT = 'append through a connection without the reserved application_name';
END
$$;
-- +goose StatementEnd

CREATE TRIGGER events_readmodel_never_writes
    BEFORE INSERT OR UPDATE ON events
    FOR EACH STATEMENT
    WHEN (current_setting('application_name') = 'onceledger-readmodel')
    EXECUTE FUNCTION events_refuse_readmodel_writes();

-- +goose Down
DROP TRIGGER events_readmodel_never_writes ON events;
DROP FUNCTION events_refuse_readmodel_writes();

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION feed_horizon() RETURNS bigint
LANGUAGE sql STABLE PARALLEL RESTRICTED AS $$
    SELECT LEAST(
        pg_snapshot_xmax(snap.s)::text::bigint,
        (SELECT min(x::text::bigint)
         FROM pg_snapshot_xip(snap.s) AS x
         WHERE NOT EXISTS (
             SELECT 1 FROM pg_stat_activity a
             WHERE a.backend_xid = x::xid
               AND a.datname IS NOT NULL
               AND a.datname <> current_database())))
    FROM (SELECT pg_current_snapshot() AS s) AS snap
$$;
-- +goose StatementEnd
