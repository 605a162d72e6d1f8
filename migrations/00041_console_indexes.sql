-- Indexes for the console's keyset-paged lists and lookups (adapters/console,
-- adapters/postgres/readmodel/console.go), so that every page is an index
-- range scan however deep it is and however large the tables grow.
-- `onceledger rebuild` recreates read-model indexes on its shadow tables
-- from their definitions, so these survive a rebuild.

-- +goose Up

-- Payments, most recently active first: (updated_at, provider, payment_id)
-- scanned backwards; and search by payment id prefix in any collation.
CREATE INDEX payments_console_recent_idx ON payments (updated_at, provider, payment_id);
CREATE INDEX payments_console_id_prefix_idx ON payments (payment_id text_pattern_ops);

-- The inbox, most recent first (its status included: the outcome chart
-- per day is an index-only scan); by status, most recent first (also the
-- counts by status and provider, index-only); and the deliveries of one
-- stream (a payment's timeline).
CREATE INDEX webhook_inbox_console_recent_idx ON webhook_inbox (first_seen_at, provider, dedup_key) INCLUDE (status);
CREATE INDEX webhook_inbox_console_status_idx ON webhook_inbox (status, first_seen_at, provider, dedup_key);
CREATE INDEX webhook_inbox_console_stream_idx ON webhook_inbox (stream_id) WHERE stream_id IS NOT NULL;

-- Reconciliation items, oldest first (unknown opening time first).
CREATE INDEX reconciliation_items_console_age_idx ON reconciliation_items
    ((coalesce(opened_at, '-infinity'::timestamptz)), stream_id, kind, item_key);

-- The daily volume chart: captures, refunds and disputes by day and
-- currency, an index-only scan of the postings it sums.
CREATE INDEX ledger_entries_console_volume_idx ON ledger_entries (occurred_at)
    INCLUDE (currency, account, amount, event_type)
    WHERE account IN ('revenue:sales', 'revenue:refunds') OR account LIKE 'receivable:disputes:%';

-- Payouts reported by webhooks, most recent first.
CREATE INDEX ledger_entries_console_payouts_idx ON ledger_entries (occurred_at, stream_id)
    WHERE account = 'bank:payouts' AND event_type = 'payout.paid';

-- +goose Down
DROP INDEX ledger_entries_console_payouts_idx;
DROP INDEX ledger_entries_console_volume_idx;
DROP INDEX reconciliation_items_console_age_idx;
DROP INDEX webhook_inbox_console_stream_idx;
DROP INDEX webhook_inbox_console_status_idx;
DROP INDEX webhook_inbox_console_recent_idx;
DROP INDEX payments_console_id_prefix_idx;
DROP INDEX payments_console_recent_idx;
