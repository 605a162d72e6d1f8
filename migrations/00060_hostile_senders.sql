-- Issue 13 (hostile senders).
--
-- Statuses: 'verified' is a held candidate (an unverified delivery kept
-- under its own key, provider dedup key + '|unverified:' + payload hash)
-- that its provider confirmed and that was promoted: its facts were
-- recorded under the real dedup key, in that key's own row. 'failed' is a
-- row whose facts could not be recorded after a bounded number of attempts
-- (EventStoreDB mode: a decision that fails permanently); last_error says
-- why, and a redrive retries it after a fix.
--
-- Personal data: raw bodies may be erased (retention or `onceledger
-- erase`): raw_body becomes NULL and raw_erased_at says when. The payload
-- hash, the normalized facts and the events stay. raw_erasures is the
-- audit record of each erasure (who, what, how many rows), written in the
-- same transaction as the erasure.

-- +goose Up
ALTER TABLE webhook_inbox DROP CONSTRAINT webhook_inbox_status_check;
ALTER TABLE webhook_inbox ADD CONSTRAINT webhook_inbox_status_check
    CHECK (status IN ('received', 'applied', 'ignored', 'unverified', 'invalid', 'verified', 'failed'));

ALTER TABLE webhook_inbox ALTER COLUMN raw_body DROP NOT NULL;
ALTER TABLE webhook_inbox ADD COLUMN raw_erased_at timestamptz;
ALTER TABLE webhook_inbox ADD CONSTRAINT webhook_inbox_raw_erased_check
    CHECK ((raw_body IS NULL) = (raw_erased_at IS NOT NULL));
ALTER TABLE webhook_conflicts ALTER COLUMN raw_body DROP NOT NULL;
ALTER TABLE webhook_conflicts ADD COLUMN raw_erased_at timestamptz;
-- The retention worker looks for bodies still kept, oldest first.
CREATE INDEX webhook_inbox_raw_kept_idx ON webhook_inbox (first_seen_at) WHERE raw_body IS NOT NULL;

CREATE TABLE raw_erasures (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    erased_at   timestamptz NOT NULL DEFAULT now(),
    actor       text        NOT NULL CHECK (actor <> ''),
    reason      text        NOT NULL CHECK (reason IN ('retention', 'request')),
    selector    text        NOT NULL,
    inbox_rows  integer     NOT NULL,
    conflict_rows integer   NOT NULL
);
COMMENT ON TABLE raw_erasures IS
    'audit of raw body erasures: who (actor), why (retention or an operator request), what (selector), how many rows';
GRANT SELECT ON raw_erasures TO onceledger_readonly;

-- Held rows from before this migration own their real dedup key: until now
-- a held (unverified) delivery was stored under it, status 'unverified',
-- and kept it as 'invalid' once its provider denied it (00010 moved PayPal
-- IPN ones to provider 'paypal', keys 'ipn:...'). Left there, such a row
-- would still be verified and booked, but a forged one would pre-empt the
-- genuine delivery for good: promoting the genuine candidate would find the
-- real key taken and count it a duplicate. So each becomes the candidate it
-- would be today, under real key + '|unverified:' + payload hash, status
-- unchanged: the verifier confirms an 'unverified' one and promotes it to
-- the real key (then booked), an 'invalid' one stays kept and marked,
-- never posted. Only held deliveries ever had these statuses. Its conflict
-- rows (redeliveries of the key with other facts, kept for review) follow
-- it; the foreign key has no ON UPDATE CASCADE, so it is lifted meanwhile.
ALTER TABLE webhook_conflicts DROP CONSTRAINT webhook_conflicts_provider_dedup_key_fkey;

CREATE TEMP TABLE held_rows ON COMMIT DROP AS
SELECT provider, dedup_key AS old_key, dedup_key || '|unverified:' || payload_hash AS new_key
FROM webhook_inbox i
WHERE status IN ('unverified', 'invalid') AND strpos(dedup_key, '|unverified:') = 0
  AND NOT EXISTS (SELECT 1 FROM webhook_inbox c
                  WHERE c.provider = i.provider AND c.dedup_key = i.dedup_key || '|unverified:' || i.payload_hash);

UPDATE webhook_conflicts c SET dedup_key = h.new_key
FROM held_rows h WHERE c.provider = h.provider AND c.dedup_key = h.old_key;

UPDATE webhook_inbox i
SET dedup_key  = h.new_key,
    normalized = CASE WHEN i.normalized IS NULL THEN NULL
                      ELSE jsonb_set(i.normalized, '{dedup_key}', to_jsonb(h.new_key)) END
FROM held_rows h WHERE i.provider = h.provider AND i.dedup_key = h.old_key;

ALTER TABLE webhook_conflicts ADD CONSTRAINT webhook_conflicts_provider_dedup_key_fkey
    FOREIGN KEY (provider, dedup_key) REFERENCES webhook_inbox (provider, dedup_key) ON DELETE CASCADE;

-- +goose Down
-- Held rows stay candidates: several may share one real key, which the
-- older code would let the first one take back, forged or not.
DROP TABLE raw_erasures;
DROP INDEX webhook_inbox_raw_kept_idx;
ALTER TABLE webhook_conflicts DROP COLUMN raw_erased_at;
ALTER TABLE webhook_inbox DROP CONSTRAINT webhook_inbox_raw_erased_check;
ALTER TABLE webhook_inbox DROP COLUMN raw_erased_at;
ALTER TABLE webhook_inbox ALTER COLUMN raw_body SET NOT NULL;
ALTER TABLE webhook_inbox DROP CONSTRAINT webhook_inbox_status_check;
ALTER TABLE webhook_inbox ADD CONSTRAINT webhook_inbox_status_check
    CHECK (status IN ('received', 'applied', 'ignored', 'unverified', 'invalid'));
