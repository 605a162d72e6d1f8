-- Bank statements (issue 37): the booked lines of the bank accounts'
-- statements, the statements themselves, and which payouts a line banked.
-- Written by the payouts projection (with payouts and settlement_lines:
-- the chain of proof from a provider's report to the bank);
-- `onceledger rebuild payouts` recreates them.

-- +goose Up
CREATE TABLE bank_statement_lines (
    account     text        NOT NULL,
    line_key    text        NOT NULL, -- the bank's reference of the entry, else its columns (bankfile.Entry.Key)
    reference   text        NOT NULL DEFAULT '',
    format      text        NOT NULL,
    statement   text        NOT NULL DEFAULT '',
    booked_on   date        NOT NULL,
    value_on    date,
    amount      bigint      NOT NULL, -- signed: credits positive
    currency    text        NOT NULL,
    reversal    boolean     NOT NULL DEFAULT false,
    code        text        NOT NULL DEFAULT '',
    description text        NOT NULL DEFAULT '',
    status      text        NOT NULL CHECK (status IN ('matched', 'suspense', 'returned')),
    payouts     jsonb       NOT NULL DEFAULT '[]', -- [{"provider","id","amount"}]: what it banked or returned
    event_id    uuid        NOT NULL,
    recorded_at timestamptz NOT NULL,
    CONSTRAINT bank_statement_lines_pkey PRIMARY KEY (account, line_key)
);

CREATE INDEX bank_statement_lines_booked_idx ON bank_statement_lines (account, booked_on);

CREATE TABLE bank_statements (
    account       text        NOT NULL,
    statement_key text        NOT NULL, -- its delivery's dedup key
    format        text        NOT NULL,
    statement_id  text        NOT NULL DEFAULT '',
    seq           bigint      NOT NULL DEFAULT 0,
    page          bigint      NOT NULL DEFAULT 0,
    covers        date        NOT NULL,
    currency      text        NOT NULL DEFAULT '',
    opening       bigint,
    opening_on    date,
    closing       bigint,
    closing_on    date,
    entries       integer     NOT NULL DEFAULT 0,
    event_id      uuid        NOT NULL,
    CONSTRAINT bank_statements_pkey PRIMARY KEY (account, statement_key)
);

CREATE TABLE bank_payouts (
    provider  text    NOT NULL,
    payout_id text    NOT NULL,
    account   text    NOT NULL,
    line_key  text    NOT NULL,
    booked_on date    NOT NULL,
    -- the line's amount and currency (a line may bank several payouts);
    -- named apart from payouts' own, which GET /v1/payouts joins
    line_amount   bigint NOT NULL,
    line_currency text   NOT NULL,
    returned  boolean NOT NULL DEFAULT false,
    CONSTRAINT bank_payouts_pkey PRIMARY KEY (provider, payout_id)
);

GRANT SELECT ON bank_statement_lines, bank_statements, bank_payouts TO onceledger_readonly;

-- +goose Down
DROP TABLE bank_payouts;
DROP TABLE bank_statements;
DROP TABLE bank_statement_lines;
