-- Provider balances (docs/reference.md, "Provider balances"): every balance
-- a provider, a bank or a person states is a balance assertion, compared
-- with the ledger's balance of that account and currency as of its moment.
-- Both tables belong to the reconciliation projection (it also keeps the
-- balance_mismatch items), written in feed order from the events of the
-- assertion streams and the postings of every event.

-- +goose Up

-- One row per stated balance (a point of a balance.asserted event).
-- ledger is the sum of the account's movements with effective_at <= as_of,
-- kept current as late facts arrive: a movement at t adds its amount to
-- the assertions of its account and currency as of t or later (found
-- through balance_assertions_account_idx), never by a re-scan.
CREATE TABLE balance_assertions (
    stream_id   text        NOT NULL,
    point_key   text        NOT NULL,
    provider    text        NOT NULL,
    account     text        NOT NULL,
    currency    text        NOT NULL,
    as_of       timestamptz NOT NULL,
    stated      bigint      NOT NULL,
    ledger      bigint      NOT NULL,
    source      text        NOT NULL,
    actor       text        NOT NULL DEFAULT '',
    note        text        NOT NULL DEFAULT '',
    recorded_at timestamptz NOT NULL,
    event_id    uuid        NOT NULL,
    CONSTRAINT balance_assertions_pkey PRIMARY KEY (stream_id, point_key)
);

CREATE INDEX balance_assertions_account_idx ON balance_assertions (account, currency, as_of);
-- The differing ones, for the balance_mismatch item: first and last in one
-- indexed read each, however many agree.
CREATE INDEX balance_assertions_differs_idx ON balance_assertions (account, currency, as_of)
    WHERE ledger <> stated;
CREATE INDEX balance_assertions_provider_idx ON balance_assertions (provider, as_of);

-- The postings on accounts a provider or bank states (provider:*, bank:*),
-- as the reconciliation projection saw them in the feed: its own copy, so
-- that its figures depend on the feed alone (the ledger projection runs at
-- its own position). Checking a new assertion is one indexed sum from the
-- nearest earlier assertion.
CREATE TABLE balance_movements (
    event_id      uuid        NOT NULL,
    posting_index int         NOT NULL,
    account       text        NOT NULL,
    currency      text        NOT NULL,
    effective_at  timestamptz NOT NULL,
    amount        bigint      NOT NULL,
    CONSTRAINT balance_movements_pkey PRIMARY KEY (event_id, posting_index)
);

CREATE INDEX balance_movements_account_idx ON balance_movements (account, currency, effective_at) INCLUDE (amount);

GRANT SELECT ON balance_assertions TO onceledger_readonly;

-- +goose Down
DROP TABLE balance_movements;
DROP TABLE balance_assertions;
