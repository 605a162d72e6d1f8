-- Expected payments (docs/reference.md, "Expected payments"): the
-- expectation process manager's tables (adapters/expectations). Each
-- expectation is its own event stream (expectation-{id}); these rows are
-- what the manager folded from those streams, with the schedule of asking
-- the provider, and are written only by it, in the transaction that moves
-- its checkpoint. status is the fold of the expectation's own events,
-- never a join of other read models.
--
-- Console sign-ins may be writer tokens (ONCELEDGER_WRITER_TOKENS).

-- +goose Up
ALTER TABLE console_sessions DROP CONSTRAINT IF EXISTS console_sessions_role_check;
ALTER TABLE console_sessions ADD CONSTRAINT console_sessions_role_check CHECK (role IN ('read', 'admin', 'writer'));

CREATE TABLE expected_payments (
    id             uuid        PRIMARY KEY,
    provider       text        NOT NULL,
    reference      text        NOT NULL,
    amount         bigint      NOT NULL CHECK (amount > 0),
    currency       text        NOT NULL,
    expires_at     timestamptz NOT NULL,
    registered_at  timestamptz NOT NULL,
    status         text        NOT NULL CHECK (status IN ('expected', 'paid', 'overdue', 'failed', 'canceled')),
    late           boolean     NOT NULL DEFAULT false,
    payment_stream text        NOT NULL DEFAULT '',
    capture_id     text        NOT NULL DEFAULT '',
    paid_amount    bigint      NOT NULL DEFAULT 0,
    paid_currency  text        NOT NULL DEFAULT '',
    paid_at        timestamptz,
    version        bigint      NOT NULL,
    updated_at     timestamptz NOT NULL,
    -- The schedule of asking the provider (NULL: nothing to ask: a
    -- terminal status, or a provider onceledger does not ask), the
    -- attempts so far (backoff) and the lease of the one asker.
    next_query_at  timestamptz,
    query_attempts integer     NOT NULL DEFAULT 0,
    lease_owner    text,
    lease_until    timestamptz,
    CONSTRAINT expected_payments_reference_key UNIQUE (provider, reference)
);

-- The clock's and the asker's one indexed read per due expectation.
CREATE INDEX expected_payments_due_idx ON expected_payments (expires_at) WHERE status IN ('expected', 'failed');
CREATE INDEX expected_payments_query_idx ON expected_payments (next_query_at) WHERE next_query_at IS NOT NULL;
CREATE INDEX expected_payments_status_idx ON expected_payments (status, registered_at DESC, id);

-- Every capture and failure the manager saw in the feed, under each id the
-- merchant may have registered (the payment's own id and the merchant's
-- references): an expectation registered after its capture was recorded
-- (the shop registers late, a query or a bill came first) is paid from
-- here.
CREATE TABLE expectation_captures (
    provider       text   NOT NULL,
    reference      text   NOT NULL,
    payment_stream text   NOT NULL,
    capture_id     text   NOT NULL,
    amount         bigint NOT NULL,
    currency       text   NOT NULL,
    failed         boolean NOT NULL DEFAULT false,
    reason         text   NOT NULL DEFAULT '',
    occurred_at    timestamptz NOT NULL,
    seen_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT expectation_captures_pkey PRIMARY KEY (provider, reference, failed, capture_id)
);
-- Kept for the capture window (adapters/expectations.CaptureWindow, 30 days)
-- after the manager saw them, then pruned.
CREATE INDEX expectation_captures_seen_idx ON expectation_captures (seen_at);

-- The manager's position in the global feed (one row).
CREATE TABLE expectation_checkpoint (
    id          boolean PRIMARY KEY DEFAULT true CHECK (id),
    commit_pos  bigint  NOT NULL DEFAULT 0,
    prepare_pos bigint  NOT NULL DEFAULT 0,
    lease_owner text,
    lease_until timestamptz
);
INSERT INTO expectation_checkpoint (id) VALUES (true);

GRANT SELECT ON expected_payments TO onceledger_readonly;

-- +goose Down
DROP TABLE expectation_checkpoint;
DROP TABLE expectation_captures;
DROP TABLE expected_payments;
ALTER TABLE console_sessions DROP CONSTRAINT IF EXISTS console_sessions_role_check;
ALTER TABLE console_sessions ADD CONSTRAINT console_sessions_role_check CHECK (role IN ('read', 'admin'));
