-- Foundation: the event store and the webhook inbox.

-- +goose Up

-- The Postgres event store. Streams are versioned from 0; the UNIQUE
-- (stream_id, version) constraint is the optimistic-concurrency judge, and the
-- UNIQUE event_id makes a retried append of deterministic ids collide instead
-- of duplicating facts.
--
-- The global feed is ordered by (tx_id, global_position), not by
-- global_position alone: identity values are handed out before commit, so
-- transactions commit out of position order. tx_id is the writing
-- transaction's 64-bit id; readers only read below the oldest running
-- transaction (pg_snapshot_xmin), see adapters/postgres/eventstore.go.
CREATE TABLE events (
    global_position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tx_id           bigint      NOT NULL DEFAULT (pg_current_xact_id()::text::bigint),
    stream_id       text        NOT NULL CHECK (stream_id <> ''),
    version         bigint      NOT NULL CHECK (version >= 0),
    event_id        uuid        NOT NULL,
    type            text        NOT NULL CHECK (type <> ''),
    data            jsonb       NOT NULL,
    metadata        jsonb,
    recorded_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT events_event_id_key UNIQUE (event_id),
    CONSTRAINT events_stream_version_key UNIQUE (stream_id, version)
);

-- The global feed order; ReadAll and Head scan it.
CREATE INDEX events_feed_idx ON events (tx_id, global_position);

-- The inbox is the dedup gate: the primary key decides first arrivals (INSERT
-- ... ON CONFLICT). Both key columns are NOT NULL and non-empty, because NULLs
-- are distinct in a unique constraint and would silently disable the gate.
CREATE TABLE webhook_inbox (
    provider        text        NOT NULL CHECK (provider <> ''),
    dedup_key       text        NOT NULL CHECK (dedup_key <> ''),
    event_type      text        NOT NULL DEFAULT '',
    stream_id       text,
    payload_hash    text        NOT NULL,
    raw_body        bytea       NOT NULL,
    normalized      jsonb,
    status          text        NOT NULL
        CHECK (status IN ('received', 'applied', 'ignored', 'unverified', 'invalid')),
    delivery_count  integer     NOT NULL DEFAULT 1,
    conflict_count  integer     NOT NULL DEFAULT 0,
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    last_error      text,
    first_seen_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at    timestamptz NOT NULL DEFAULT now(),
    applied_at      timestamptz,
    PRIMARY KEY (provider, dedup_key)
);

-- Rows still to be driven (the sweeper's work list) are few; index only them.
CREATE INDEX webhook_inbox_pending_idx ON webhook_inbox (status, next_attempt_at)
    WHERE status IN ('received', 'unverified');

-- Redeliveries of a known dedup key with a different payload: kept verbatim,
-- one row per distinct payload, for reconciliation.
CREATE TABLE webhook_conflicts (
    provider       text        NOT NULL,
    dedup_key      text        NOT NULL,
    payload_hash   text        NOT NULL,
    raw_body       bytea       NOT NULL,
    first_seen_at  timestamptz NOT NULL DEFAULT now(),
    last_seen_at   timestamptz NOT NULL DEFAULT now(),
    delivery_count integer     NOT NULL DEFAULT 1,
    PRIMARY KEY (provider, dedup_key, payload_hash),
    FOREIGN KEY (provider, dedup_key) REFERENCES webhook_inbox (provider, dedup_key) ON DELETE CASCADE
);

-- +goose Down
DROP TABLE webhook_conflicts;
DROP TABLE webhook_inbox;
DROP TABLE events;
