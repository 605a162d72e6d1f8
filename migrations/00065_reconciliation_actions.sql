-- Operators resolve and reopen reconciliation items (POST
-- /v1/reconciliation/resolve|reopen, the console) by appending
-- reconciliation.resolved / reconciliation.reopened events to the item's
-- stream; the reconciliation projection records who resolved an item and
-- the note of the last action. The events are the audit trail: these
-- columns are only their projection.

-- +goose Up
ALTER TABLE reconciliation_items
    ADD COLUMN resolved_by text,
    ADD COLUMN note        text;

-- Who re-drove an inbox row with the current code (onceledger redrive,
-- POST /v1/inbox/redrive, the console), and when.
ALTER TABLE webhook_inbox
    ADD COLUMN redriven_by text,
    ADD COLUMN redriven_at timestamptz;

-- +goose Down
ALTER TABLE webhook_inbox DROP COLUMN redriven_at, DROP COLUMN redriven_by;
ALTER TABLE reconciliation_items DROP COLUMN note, DROP COLUMN resolved_by;
