-- The facts of a provider's day still awaiting a report (docs/reference.md,
-- "Provider days": awaiting_report_facts): the captures and refunds a
-- webhook (or the provider's API) recorded that no report or bill line has
-- settled yet. day_facts remembers each such fact by its stream and id
-- ("capture:ID", "refund:ID"), the day it counts on, and whether a line
-- settled it, so that a line arriving days later takes it off its own day,
-- and a line arriving before its webhook keeps the webhook's fact from
-- counting at all. Kept by the reconciliation projection with provider_days.
-- Days recorded before this migration count 0 until a rebuild.

-- +goose Up
ALTER TABLE provider_days ADD COLUMN awaiting_report_facts bigint NOT NULL DEFAULT 0;

CREATE TABLE day_facts (
    stream_id text    NOT NULL,
    fact      text    NOT NULL, -- "capture:" or "refund:" and the provider's id
    provider  text    NOT NULL,
    day       date    NOT NULL, -- the webhook fact's day in the provider's bill zone
    settled   boolean NOT NULL, -- a report or bill line settled it
    CONSTRAINT day_facts_pkey PRIMARY KEY (stream_id, fact)
);

-- +goose Down
DROP TABLE day_facts;
ALTER TABLE provider_days DROP COLUMN awaiting_report_facts;
