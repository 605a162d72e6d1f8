-- Settlement read models (issue 12): the lines of the providers' settlement
-- reports as recorded, and the payouts they prove. Written by the payouts
-- projection only; `onceledger rebuild payouts` recreates both.

-- +goose Up
CREATE TABLE settlement_lines (
    provider          text        NOT NULL,
    line_key          text        NOT NULL, -- the line's dedup key (its own ids)
    kind              text        NOT NULL,
    source_type       text        NOT NULL DEFAULT '',
    line_id           text        NOT NULL DEFAULT '',
    payment_id        text        NOT NULL DEFAULT '',
    capture_id        text        NOT NULL DEFAULT '',
    refund_id         text        NOT NULL DEFAULT '',
    dispute_id        text        NOT NULL DEFAULT '',
    gross             bigint      NOT NULL,
    fee               bigint      NOT NULL,
    net               bigint      NOT NULL,
    currency          text        NOT NULL,
    original_amount   bigint      NOT NULL,
    original_currency text        NOT NULL,
    exchange_rate     text        NOT NULL DEFAULT '',
    payout_id         text        NOT NULL DEFAULT '',
    occurred_at       timestamptz NOT NULL,
    available_on      timestamptz,
    stream_id         text        NOT NULL,
    CONSTRAINT settlement_lines_pkey PRIMARY KEY (provider, line_key)
);

CREATE INDEX settlement_lines_payout_idx ON settlement_lines (provider, payout_id);
CREATE INDEX settlement_lines_payment_idx ON settlement_lines (provider, payment_id);

CREATE TABLE payouts (
    provider     text        NOT NULL,
    payout_id    text        NOT NULL,
    amount       bigint      NOT NULL DEFAULT 0,
    currency     text,
    arrival_date timestamptz,
    paid         boolean     NOT NULL DEFAULT false,
    failed       boolean     NOT NULL DEFAULT false,
    status       text        NOT NULL DEFAULT 'paid'
        CHECK (status IN ('paid', 'failed', 'reconciled', 'mismatch')),
    line_count   bigint      NOT NULL DEFAULT 0,
    lines_net    bigint      NOT NULL DEFAULT 0,
    -- lines_net − amount: what the lines say beyond what was paid out.
    difference   bigint      NOT NULL DEFAULT 0,
    updated_at   timestamptz NOT NULL,
    CONSTRAINT payouts_pkey PRIMARY KEY (provider, payout_id)
);

CREATE INDEX payouts_status_idx ON payouts (status, arrival_date);

INSERT INTO projection_checkpoints (name) VALUES ('payouts') ON CONFLICT (name) DO NOTHING;

GRANT SELECT ON payouts, settlement_lines TO onceledger_readonly;

-- +goose Down
DELETE FROM projection_checkpoints WHERE name = 'payouts';
DROP TABLE payouts;
DROP TABLE settlement_lines;
