-- The feed horizon (00004, 00050), same answer, cheaper to compute.
--
-- Every read of the feed (each projector's batch, /v1/projections, the
-- rebuild's catch-up) calls feed_horizon() once. As a LANGUAGE sql function
-- whose body has a FROM clause it is never inlined: its body was planned
-- again on every call (the pg_stat_activity view and its joins), and
-- pg_stat_activity was scanned once per in-progress transaction of the
-- snapshot. With six transactions in progress a call took ~0.6 ms on the
-- development VM (2 cores), against ~0.07 ms for this version
-- (pgbench -M prepared, one client, `SELECT feed_horizon()`); under ingest
-- at saturation the feed reads were the largest single statement of the
-- database's time per delivery (docs/benchmarks/history/, the 2026-12-01
-- ingestcost run).
--
-- What changed:
-- 1. LANGUAGE plpgsql: its query has no parameters, so the plan is made
--    once per connection and kept (a parameterless statement always uses
--    its generic plan, whatever plan_cache_mode says).
-- 2. pg_stat_activity is read once and grouped by transaction id, instead
--    of once per in-progress transaction.
--
-- Why the answer is the same (00050's argument is unchanged):
-- - The function is STABLE, so its query runs on the calling statement's
--   snapshot (no new one is taken) and pg_current_snapshot() is that
--   snapshot, as before; pg_stat_activity is read after it, as before.
-- - A transaction x of the snapshot is passed exactly when some backend
--   shows x and bool_and of the predicate over every backend showing x is
--   true: the grouped join computes the same bool_and per x as the
--   correlated subquery did, and a transaction no backend shows has no
--   group (NULL → not passed), as the empty subquery gave NULL.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION feed_horizon() RETURNS bigint
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED AS $$
BEGIN
    RETURN (
        SELECT LEAST(
            pg_snapshot_xmax(snap.s)::text::bigint,
            (SELECT min(x::text::bigint)
             FROM pg_snapshot_xip(snap.s) AS x
             LEFT JOIN (
                 SELECT a.backend_xid,
                        bool_and((a.datname IS NOT NULL AND a.datname <> current_database())
                                 OR a.application_name = 'onceledger-readmodel') AS passable
                 FROM pg_stat_activity a
                 WHERE a.backend_xid IS NOT NULL
                 GROUP BY a.backend_xid) p ON p.backend_xid = x::xid
             WHERE NOT coalesce(p.passable, false)))
        FROM (SELECT pg_current_snapshot() AS s) AS snap);
END
$$;
-- +goose StatementEnd

-- +goose Down
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
