-- Read models: tables the projectors maintain from the event feed, and that
-- accountants query directly. They are derived data: `onceledger rebuild`
-- recreates them from history at any time. Amounts are bigint minor units
-- next to a currency column (upper-case ISO 4217).

-- +goose Up

-- One row per payment stream: the payment.Summary fold of its events.
-- version is the stream version of the last event applied; the projection
-- only writes a row forward (WHERE payments.version < new), so a replayed
-- batch cannot move it back.
CREATE TABLE payments (
    provider              text        NOT NULL,
    payment_id            text        NOT NULL,
    stream_id             text        NOT NULL,
    status                text        NOT NULL,
    -- NULL until an event with an amount fixes the payment's currency.
    currency              text        CHECK (currency ~ '^[A-Z]{3}$'),
    authorized_amount     bigint      NOT NULL DEFAULT 0,
    captured_amount       bigint      NOT NULL DEFAULT 0,
    fee_amount            bigint      NOT NULL DEFAULT 0,
    refunded_amount       bigint      NOT NULL DEFAULT 0,
    refund_pending_amount bigint      NOT NULL DEFAULT 0,
    dispute_open_amount   bigint      NOT NULL DEFAULT 0,
    dispute_lost_amount   bigint      NOT NULL DEFAULT 0,
    failed                boolean     NOT NULL DEFAULT false,
    canceled              boolean     NOT NULL DEFAULT false,
    version               bigint      NOT NULL CHECK (version >= 0),
    -- recorded_at of the last event applied (not the wall clock), so a
    -- rebuild reproduces it.
    updated_at            timestamptz NOT NULL,
    CONSTRAINT payments_pkey PRIMARY KEY (provider, payment_id),
    CONSTRAINT payments_stream_id_key UNIQUE (stream_id)
);

CREATE INDEX payments_status_idx ON payments (status);

-- The journal: one row per posting of a domain event (debit positive, credit
-- negative). (event_id, posting_index) makes a replayed event a no-op.
CREATE TABLE ledger_entries (
    id               bigserial   NOT NULL,
    event_id         uuid        NOT NULL,
    posting_index    integer     NOT NULL CHECK (posting_index >= 0),
    stream_id        text        NOT NULL,
    event_type       text        NOT NULL,
    provider         text        NOT NULL,
    account          text        NOT NULL,
    currency         text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    amount           bigint      NOT NULL,
    occurred_at      timestamptz NOT NULL, -- the provider's time of the fact
    recorded_at      timestamptz NOT NULL, -- when the event store recorded it
    position_commit  bigint      NOT NULL, -- global feed position of the event
    position_prepare bigint      NOT NULL,
    CONSTRAINT ledger_entries_pkey PRIMARY KEY (id),
    CONSTRAINT ledger_entries_event_posting_key UNIQUE (event_id, posting_index)
);

CREATE INDEX ledger_entries_account_idx ON ledger_entries (account, currency, occurred_at);
CREATE INDEX ledger_entries_currency_idx ON ledger_entries (currency, occurred_at);
CREATE INDEX ledger_entries_occurred_at_idx ON ledger_entries (occurred_at);
CREATE INDEX ledger_entries_stream_idx ON ledger_entries (stream_id);

-- Balance per account and currency: the sum of its entries, maintained in
-- the same transaction as the entries.
CREATE TABLE account_balances (
    account     text        NOT NULL,
    currency    text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    balance     bigint      NOT NULL,
    entry_count bigint      NOT NULL,
    updated_at  timestamptz NOT NULL,
    CONSTRAINT account_balances_pkey PRIMARY KEY (account, currency)
);

-- Reconciliation items, opened by reconciliation.flagged and resolved by
-- reconciliation.cleared; (stream_id, kind, item_key) identifies one.
CREATE TABLE reconciliation_items (
    stream_id         text        NOT NULL,
    kind              text        NOT NULL,
    item_key          text        NOT NULL,
    status            text        NOT NULL CHECK (status IN ('open', 'resolved')),
    provider          text        NOT NULL,
    payment_id        text        NOT NULL,
    details           text        NOT NULL DEFAULT '',
    opened_at         timestamptz,
    resolved_at       timestamptz,
    opened_event_id   uuid,
    resolved_event_id uuid,
    CONSTRAINT reconciliation_items_pkey PRIMARY KEY (stream_id, kind, item_key)
);

CREATE INDEX reconciliation_items_status_idx ON reconciliation_items (status, kind);

-- One row per projection: how far into the global feed its read model is.
-- Written in the same transaction as the read-model rows of each batch.
CREATE TABLE projection_checkpoints (
    name                   text        NOT NULL,
    position_commit        bigint      NOT NULL DEFAULT 0,
    position_prepare       bigint      NOT NULL DEFAULT 0,
    status                 text        NOT NULL DEFAULT 'stopped'
        CHECK (status IN ('live', 'stopped', 'rebuilding')),
    -- Set when the projection stopped on an event it cannot apply (it never
    -- skips one); cleared by the next committed batch.
    last_error             text,
    error_position_commit  bigint,
    error_position_prepare bigint,
    updated_at             timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT projection_checkpoints_pkey PRIMARY KEY (name)
);

INSERT INTO projection_checkpoints (name) VALUES ('ledger'), ('payments'), ('reconciliation');

-- +goose Down
DROP TABLE projection_checkpoints;
DROP TABLE reconciliation_items;
DROP TABLE account_balances;
DROP TABLE ledger_entries;
DROP TABLE payments;
