-- The global feed's visibility horizon, narrowed to this database.
--
-- Readers of the feed only return events whose writing transaction id is
-- below a horizon under which every transaction has finished (see
-- adapters/postgres/eventstore.go). pg_snapshot_xmin(pg_current_snapshot())
-- is such a horizon, but it is cluster-wide: one long write transaction in
-- ANY database of the server (another application, a test run, a migration)
-- held the projectors of this one back. Only transactions of this database
-- can write to its events table, so the horizon is the smallest id among the
-- snapshot's in-progress transactions that are not known to belong to
-- another database, or the snapshot's xmax when there is none.
--
-- Why this is safe: the in-progress list comes from the statement's own
-- snapshot, so a transaction of this database that was running when the
-- snapshot was taken is in it (and is excluded only if pg_stat_activity
-- names ANOTHER database as its owner, which it cannot). A transaction that
-- ends between the snapshot and the pg_stat_activity read simply stays in the
-- set: the horizon errs low, never high. Transactions that start later get
-- ids >= xmax.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION feed_horizon() RETURNS bigint
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

-- +goose Down
DROP FUNCTION feed_horizon();
