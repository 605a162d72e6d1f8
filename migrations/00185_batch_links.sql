-- Payout batches paid out whole (docs/reference.md, "Provider balances";
-- projections/batches.go): the reconciliation projection's links from a
-- settlement line's delivery to its batch (link "line:" + the line's dedup
-- key, payout_id), and from a fact a webhook recorded to the line that
-- settles it (link "fact:" + payment stream + "|" + fact, what it posted on
-- the provider balance, 0 once a line claimed it for its batch). They make
-- a batch's ledger figure (its balance_movements on the batch's scope)
-- independent of where the projector's batches begin and end.

-- +goose Up
CREATE TABLE batch_links (
    link      text   NOT NULL,
    payout_id text   NOT NULL DEFAULT '',
    currency  text   NOT NULL DEFAULT '',
    amount    bigint NOT NULL DEFAULT 0,
    event_id  uuid   NOT NULL, -- the last event that changed the row
    CONSTRAINT batch_links_pkey PRIMARY KEY (link)
);

-- +goose Down
DROP TABLE batch_links;
