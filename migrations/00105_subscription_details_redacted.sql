-- Issue 33: a subscription_disabled item named the subscription's whole URL
-- and the receiver's last error ("push subscription to URL disabled after
-- its retry schedule: ERROR; …"), and every reader of items saw it: read
-- tokens, the console, onceledger_readonly, push subscribers. The URL is
-- often the endpoint's credential. The projections now write the item's
-- details through payment.PublicDetails (the subscription id and the URL's
-- host only); history is not edited, and a rebuild produces the redacted
-- text from the stored events. This rewrites the rows already projected,
-- with the same expression (domain/payment/subscription_details.go) so
-- that a rebuild compares equal, and the same text for queued deliveries
-- not yet sent to other subscribers.

-- +goose Up
UPDATE reconciliation_items
SET details = 'push subscription ' || item_key || ' to host '
    || coalesce(nullif(regexp_replace(regexp_replace(
        substring(details from '^push subscription to [A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@ ]*@)?(\[[^]/?# ]*\]|[^/?#: ]*)'),
        '^\[', ''), '\]$', ''), ''), '(unknown)')
    || ' disabled after its retry schedule; its URL and last error are on GET /v1/subscriptions/' || item_key
    || ' (admin); re-enable it once the endpoint answers'
WHERE kind = 'subscription_disabled'
  AND details !~ '^push subscription [^ ]+ to host [^ ]* disabled after its retry schedule;';

UPDATE subscription_queue q
SET body = convert_to(jsonb_set(b.doc, '{data,details}', to_jsonb(
        'push subscription ' || (b.doc #>> '{data,key}') || ' to host '
        || coalesce(nullif(regexp_replace(regexp_replace(
            substring(b.doc #>> '{data,details}' from '^push subscription to [A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@ ]*@)?(\[[^]/?# ]*\]|[^/?#: ]*)'),
            '^\[', ''), '\]$', ''), ''), '(unknown)')
        || ' disabled after its retry schedule; its URL and last error are on GET /v1/subscriptions/' || (b.doc #>> '{data,key}')
        || ' (admin); re-enable it once the endpoint answers'))::text, 'UTF8')
FROM (SELECT subscription_id, seq, convert_from(body, 'UTF8')::jsonb AS doc
      FROM subscription_queue
      WHERE event_type IN ('reconciliation.opened', 'reconciliation.cleared')) b
WHERE q.subscription_id = b.subscription_id AND q.seq = b.seq
  AND b.doc #>> '{data,kind}' = 'subscription_disabled'
  AND (b.doc #>> '{data,details}') !~ '^push subscription [^ ]+ to host [^ ]* disabled after its retry schedule;';

-- +goose Down
-- The URLs are not put back.
SELECT 1;
