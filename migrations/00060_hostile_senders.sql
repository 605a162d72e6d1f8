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

-- +goose Down
DROP TABLE raw_erasures;
DROP INDEX webhook_inbox_raw_kept_idx;
ALTER TABLE webhook_conflicts DROP COLUMN raw_erased_at;
ALTER TABLE webhook_inbox DROP CONSTRAINT webhook_inbox_raw_erased_check;
ALTER TABLE webhook_inbox DROP COLUMN raw_erased_at;
ALTER TABLE webhook_inbox ALTER COLUMN raw_body SET NOT NULL;
ALTER TABLE webhook_inbox DROP CONSTRAINT webhook_inbox_status_check;
ALTER TABLE webhook_inbox ADD CONSTRAINT webhook_inbox_status_check
    CHECK (status IN ('received', 'applied', 'ignored', 'unverified', 'invalid'));
