-- Payments left pending without an expected payment (docs/providers.md,
-- "Asking the provider"): a webhook that said the payment is not paid yet
-- (Alipay WAIT_BUYER_PAY, Stripe payment_intent.processing) is recorded as
-- ignored (it carries no fact); the querier (adapters/expectations) finds
-- such rows by this partial index and asks the provider about each until a
-- fact or a close, on the schedule of pending_payments, shared by instances
-- by the same lease as expected_payments'. pending_scan is how far the
-- inbox has been looked at (rows are read again a few minutes back: a row
-- may commit after a later one).

-- +goose Up
CREATE INDEX webhook_inbox_pending_payment_idx ON webhook_inbox (first_seen_at)
    WHERE status = 'ignored' AND event_type IN ('WAIT_BUYER_PAY', 'payment_intent.processing');

CREATE TABLE pending_payments (
    provider       text        NOT NULL,
    reference      text        NOT NULL,
    seen_at        timestamptz NOT NULL,
    next_query_at  timestamptz,
    query_attempts integer     NOT NULL DEFAULT 0,
    lease_owner    text,
    lease_until    timestamptz,
    CONSTRAINT pending_payments_pkey PRIMARY KEY (provider, reference)
);
CREATE INDEX pending_payments_query_idx ON pending_payments (next_query_at) WHERE next_query_at IS NOT NULL;

CREATE TABLE pending_scan (
    id         boolean     PRIMARY KEY DEFAULT true CHECK (id),
    seen_until timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO pending_scan (id) VALUES (true);

-- +goose Down
DROP TABLE pending_scan;
DROP TABLE pending_payments;
DROP INDEX webhook_inbox_pending_payment_idx;
