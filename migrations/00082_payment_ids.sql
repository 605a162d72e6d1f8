-- The business ids of each payment (authorization, capture, refund and
-- dispute ids, settlement line ids, and the merchant's references its
-- deliveries named: out_trade_no, merchantReference, order ids), as its
-- events carry them: the
-- console's search finds a payment by any id a provider gives it. Filled
-- by the payments projection, in the same transaction as the payments
-- rows; a rebuild reproduces it.

-- +goose Up
CREATE TABLE payment_ids (
    business_id text NOT NULL,
    stream_id   text NOT NULL,
    kind        text NOT NULL,
    CONSTRAINT payment_ids_pkey PRIMARY KEY (business_id, stream_id, kind)
);

GRANT SELECT ON payment_ids TO onceledger_readonly;

-- The payments projection reads the feed again from its start, so that the
-- payments recorded before this table existed get their ids too. Its rows
-- only move forward (their version guard): they stay as they are.
UPDATE projection_checkpoints SET position_commit = 0, position_prepare = 0 WHERE name = 'payments';

-- +goose Down
DROP TABLE payment_ids;
