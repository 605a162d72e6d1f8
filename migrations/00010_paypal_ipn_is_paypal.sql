-- PayPal IPN is a channel of the provider "paypal" (docs/reference.md): its facts
-- live in the stream payment-paypal-{capture id} and post to the accounts
-- provider:paypal:*, and its inbox rows are ("paypal", "ipn:" + txn_id + ":" +
-- payment_status). Until now they were ("paypal-ipn", txn_id + ":" + status)
-- in streams payment-paypal-ipn-{id}, so a capture PayPal reported on both
-- channels was booked twice, into two provider balances. This moves the
-- existing IPN data to where the adapter now writes it.
--
-- Event store (Postgres). For each stream payment-paypal-ipn-X:
--   * no stream payment-paypal-X exists (IPN only): the stream is renamed
--     and its events' provider and dedup keys are rewritten in place; ids,
--     versions, feed positions and recorded_at stay.
--   * payment-paypal-X exists (REST webhooks reported the same payment: the
--     double booking): the IPN stream's events are removed and its inbox rows
--     go back to status 'received', so that the inbox sweeper re-drives them
--     through payment.Decide against the REST stream, which records only
--     what REST did not already report (one capture, one refund per id).
--     Merging the two histories here would need the domain's rules; the
--     re-drive applies exactly those rules.
-- Inbox: every paypal-ipn row becomes provider 'paypal' with key "ipn:" +
-- its old key, stream payment-paypal-X, and its stored normalized delivery
-- says the same; conflict rows follow their inbox row.
--
-- Read models are derived from the events: after this migration run
-- `onceledger rebuild --all` (the ledger moves from provider:paypal-ipn:* to
-- provider:paypal:* and the removed duplicates leave it), then
-- `onceledger verify`. Deployments whose events live in EventStoreDB keep
-- their IPN streams there: this file moves only the inbox for them.

-- +goose Up
CREATE TEMP TABLE ipn_streams ON COMMIT DROP AS
SELECT DISTINCT stream_id AS old_id,
       'payment-paypal-' || substr(stream_id, length('payment-paypal-ipn-') + 1) AS new_id,
       false AS collides
FROM events
WHERE stream_id LIKE 'payment-paypal-ipn-%' AND data->>'provider' = 'paypal-ipn';

UPDATE ipn_streams m SET collides = true
WHERE EXISTS (SELECT 1 FROM events r WHERE r.stream_id = m.new_id);

-- Colliding streams: drop the double booking; the inbox rows are re-driven.
DELETE FROM events e USING ipn_streams m
WHERE e.stream_id = m.old_id AND m.collides;

-- IPN-only streams: one provider, one key space. A conflicting_redelivery
-- item's key starts with the delivery's dedup key, which moves too.
UPDATE events e
SET stream_id = m.new_id,
    data = CASE
             WHEN e.type IN ('reconciliation.flagged', 'reconciliation.cleared')
                  AND e.data->>'kind' = 'conflicting_redelivery'
             THEN jsonb_set(jsonb_set(jsonb_set(e.data, '{provider}', '"paypal"'),
                                      '{dedup_key}', to_jsonb('ipn:' || (e.data->>'dedup_key'))),
                            '{key}', to_jsonb('ipn:' || (e.data->>'key')))
             ELSE jsonb_set(jsonb_set(e.data, '{provider}', '"paypal"'),
                            '{dedup_key}', to_jsonb('ipn:' || (e.data->>'dedup_key')))
           END
FROM ipn_streams m
WHERE e.stream_id = m.old_id AND NOT m.collides;

-- The inbox. The conflicts' foreign key has no ON UPDATE CASCADE: lift it
-- while both sides move.
ALTER TABLE webhook_conflicts DROP CONSTRAINT webhook_conflicts_provider_dedup_key_fkey;

UPDATE webhook_conflicts
SET provider = 'paypal', dedup_key = 'ipn:' || dedup_key
WHERE provider = 'paypal-ipn';

UPDATE webhook_inbox i
SET provider   = 'paypal',
    dedup_key  = 'ipn:' || i.dedup_key,
    stream_id  = CASE WHEN i.stream_id LIKE 'payment-paypal-ipn-%'
                      THEN 'payment-paypal-' || substr(i.stream_id, length('payment-paypal-ipn-') + 1)
                      ELSE i.stream_id END,
    normalized = CASE WHEN i.normalized IS NULL THEN NULL
                      ELSE jsonb_set(jsonb_set(i.normalized, '{provider}', '"paypal"'),
                                     '{dedup_key}', to_jsonb('ipn:' || i.dedup_key)) END,
    -- Rows whose events were the double booking are applied again, by the
    -- domain, against the REST stream.
    status          = CASE WHEN i.status = 'applied' AND i.stream_id IN (SELECT old_id FROM ipn_streams WHERE collides)
                           THEN 'received' ELSE i.status END,
    next_attempt_at = CASE WHEN i.status = 'applied' AND i.stream_id IN (SELECT old_id FROM ipn_streams WHERE collides)
                           THEN now() ELSE i.next_attempt_at END,
    applied_at      = CASE WHEN i.status = 'applied' AND i.stream_id IN (SELECT old_id FROM ipn_streams WHERE collides)
                           THEN NULL ELSE i.applied_at END
WHERE i.provider = 'paypal-ipn';

ALTER TABLE webhook_conflicts ADD CONSTRAINT webhook_conflicts_provider_dedup_key_fkey
    FOREIGN KEY (provider, dedup_key) REFERENCES webhook_inbox (provider, dedup_key) ON DELETE CASCADE;

-- +goose Down
-- The split cannot be restored: the double booking this removed is not
-- worth recreating. Going down leaves the data where it is.
SELECT 1;
