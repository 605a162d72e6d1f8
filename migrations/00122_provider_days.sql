-- The day's close per provider (docs/reference.md, "Provider days"): one row
-- per provider and day in the provider's own bill zone (Alipay and WeChat
-- Pay: Asia/Shanghai; the others: the reporting zone), kept by the
-- reconciliation projection in feed order, so that GET /v1/provider-days
-- reads a year of days as 366 rows, not the year's events.

-- +goose Up
CREATE TABLE provider_days (
    provider           text        NOT NULL,
    day                date        NOT NULL,
    zone               text        NOT NULL,
    events             bigint      NOT NULL DEFAULT 0, -- events with entries effective that day
    webhook_facts      bigint      NOT NULL DEFAULT 0, -- of them, recorded from webhooks (or the API)
    report_facts       bigint      NOT NULL DEFAULT 0, -- of them, recorded from report or bill lines
    report_lines       bigint      NOT NULL DEFAULT 0, -- settlement lines dated that day
    lines_without_webhook bigint   NOT NULL DEFAULT 0, -- missing_webhook items opened for that day's facts
    stated_balances    bigint      NOT NULL DEFAULT 0, -- balance assertions as of that day
    covered            boolean     NOT NULL DEFAULT false, -- an imported report or bill covers the day
    content_hash       bytea       NOT NULL,           -- SHA-256 chain over the day's event ids in feed order
    last_commit        bigint      NOT NULL DEFAULT 0, -- the last event applied (replays add nothing)
    last_prepare       bigint      NOT NULL DEFAULT 0,
    CONSTRAINT provider_days_pkey PRIMARY KEY (provider, day)
);

-- Which day's facts an item is about: the moment of the fact whose event
-- opened it, in the provider's bill zone.
CREATE TABLE item_days (
    stream_id text NOT NULL,
    kind      text NOT NULL,
    item_key  text NOT NULL,
    provider  text NOT NULL,
    day       date NOT NULL,
    CONSTRAINT item_days_pkey PRIMARY KEY (stream_id, kind, item_key)
);

CREATE INDEX item_days_provider_idx ON item_days (provider, day);

-- The differing assertions of a provider over a range of days, however
-- many agree.
CREATE INDEX balance_assertions_provider_differs_idx ON balance_assertions (provider, as_of) WHERE ledger <> stated;

GRANT SELECT ON provider_days TO onceledger_readonly;

-- +goose Down
DROP INDEX balance_assertions_provider_differs_idx;
DROP TABLE item_days;
DROP TABLE provider_days;
