-- Who made the entries a person made (opening balances, adjustments): the
-- journal shows the actor (GET /v1/journal `actor`). Kept by the
-- reconciliation projection from the assertion streams' events, keyed by
-- the event the entries belong to (ledger_entries.event_id).

-- +goose Up
CREATE TABLE ledger_actors (
    event_id uuid NOT NULL,
    actor    text NOT NULL,
    note     text NOT NULL DEFAULT '',
    kind     text NOT NULL,
    CONSTRAINT ledger_actors_pkey PRIMARY KEY (event_id)
);

GRANT SELECT ON ledger_actors TO onceledger_readonly;

-- +goose Down
DROP TABLE ledger_actors;
