-- Push subscriptions (docs/events.md, "Push subscriptions"): outbound
-- business events POSTed to an endpoint, signed per Standard Webhooks.
--
-- subscriptions: one row per endpoint. commit_pos/prepare_pos is the
-- subscription's own checkpoint in the global feed (what it has queued),
-- moved in the same transaction as the queue rows it adds. Secrets are
-- AES-256-GCM sealed with ONCELEDGER_SECRETS_KEY (nonce || ciphertext);
-- old_secret signs too until old_secret_expires_at (rotation). The lease
-- is the one sender allowed to work on the row across instances.
-- Not granted to onceledger_readonly: the rows hold (sealed) secrets.

-- +goose Up
CREATE TABLE subscriptions (
    id                    uuid PRIMARY KEY,
    url                   text NOT NULL,
    types                 text[] NOT NULL DEFAULT '{}',
    providers             text[] NOT NULL DEFAULT '{}',
    description           text NOT NULL DEFAULT '',
    state                 text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'failing', 'disabled')),
    secret                bytea NOT NULL,
    old_secret            bytea,
    old_secret_expires_at timestamptz,
    commit_pos            bigint NOT NULL DEFAULT 0,
    prepare_pos           bigint NOT NULL DEFAULT 0,
    -- A replay: the feed from replay_* up to replay_until_* is queued
    -- again on the replay lane; NULL when none is under way.
    replay_commit         bigint,
    replay_prepare        bigint,
    replay_until_commit   bigint,
    replay_until_prepare  bigint,
    replay_from_time      timestamptz, -- a replay from a time: earlier events are skipped
    last_error            text NOT NULL DEFAULT '',
    last_error_at         timestamptz,
    disabled_at           timestamptz,
    lease_owner           text,
    lease_until           timestamptz,
    created_by            text NOT NULL DEFAULT '',
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);

-- The delivery queue: events matched and not yet acknowledged, in feed
-- order (seq) per subscription, lane (0 live, 1 replay) and stream_key
-- (the event's stream; a settlement.line batch's payout). The body is
-- the exact JSON POSTed, so that every attempt sends the same bytes.
CREATE TABLE subscription_queue (
    subscription_id uuid NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    seq             bigserial,
    lane            smallint NOT NULL,
    stream_key      text NOT NULL,
    event_id        uuid NOT NULL,
    event_type      text NOT NULL,
    commit_pos      bigint NOT NULL,
    prepare_pos     bigint NOT NULL,
    body            bytea NOT NULL,
    queued_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (subscription_id, seq)
);
CREATE INDEX subscription_queue_stream_idx ON subscription_queue (subscription_id, lane, stream_key, seq);

-- The pending state per stream: its head (the one event of the stream
-- that may be sent now), how often the head was tried, and when it is
-- due (the stored retry schedule; also the in-flight lease of an attempt).
CREATE TABLE subscription_streams (
    subscription_id uuid NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    lane            smallint NOT NULL,
    stream_key      text NOT NULL,
    head_seq        bigint NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    PRIMARY KEY (subscription_id, lane, stream_key)
);
CREATE INDEX subscription_streams_due_idx ON subscription_streams (subscription_id, lane, next_attempt_at);

-- Every attempt: written in batches by the sender.
CREATE TABLE subscription_attempts (
    id              bigserial PRIMARY KEY,
    subscription_id uuid NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    event_id        uuid NOT NULL,
    event_type      text NOT NULL,
    attempt         integer NOT NULL,
    replay          boolean NOT NULL DEFAULT false,
    attempted_at    timestamptz NOT NULL,
    status          integer,
    latency_ms      integer NOT NULL,
    error           text NOT NULL DEFAULT '',
    succeeded       boolean NOT NULL
);
CREATE INDEX subscription_attempts_sub_idx ON subscription_attempts (subscription_id, id DESC);

-- The operators' actions on subscriptions (create, patch, delete, enable,
-- rotate-secret, replay) with the actor (the token's name) and note: the
-- audit trail of a configuration that is not a ledger fact. No foreign
-- key: the trail outlives a deleted subscription.
CREATE TABLE subscription_actions (
    id              bigserial PRIMARY KEY,
    subscription_id uuid NOT NULL,
    action          text NOT NULL,
    actor           text NOT NULL,
    note            text NOT NULL DEFAULT '',
    details         jsonb NOT NULL DEFAULT '{}',
    at              timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX subscription_actions_sub_idx ON subscription_actions (subscription_id, id);

-- +goose Down
DROP TABLE subscription_actions;
DROP TABLE subscription_attempts;
DROP TABLE subscription_streams;
DROP TABLE subscription_queue;
DROP TABLE subscriptions;
