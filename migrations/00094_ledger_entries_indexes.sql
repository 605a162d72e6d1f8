-- Which query needs each index of ledger_entries (11 before this
-- migration). Every posting the ledger projector writes pays for each
-- index, so an index no query reads is pure write cost (issue 28). The
-- evidence, from the SQL in adapters/postgres/readmodel and EXPLAIN on a
-- database of 80,000 generated entries (6 accounts, 4 currencies, 2 months):
--
--   ledger_entries_pkey (id)                 kept: the table's primary key
--       (replica identity); no read path looks entries up by id (the
--       trial balance's adjustments sort their few rows by it).
--   ledger_entries_event_posting_key         kept: ON CONFLICT (event_id,
--       (event_id, posting_index)                posting_index) of the projector's insert
--       (writer.go), a replayed event a no-op; the rebuild's row key.
--   ledger_entries_feed_order_idx            kept: the keyset of /v1/ledger/entries
--       (position_commit, position_prepare,      and /v1/journal pages (query.go Entries,
--        event_id, posting_index)                periods.go Journal): Index Scan + Limit.
--   ledger_entries_account_idx               kept: as_of balances of an account
--       (account, currency, occurred_at)         prefix (query.go Balances): the only index
--       led by account.
--   ledger_entries_currency_idx              kept: as_of balances and entry pages of
--       (currency, occurred_at)                  one currency with a time range (Bitmap
--       Index Scan on it: no other index leads by currency).
--   ledger_entries_occurred_at_idx           kept: as_of balances and entry/journal
--       (occurred_at)                            ranges with time=effective (Bitmap Index
--       Scan on it).
--   ledger_entries_recorded_at_idx           kept: the same with time=booked (00035).
--   ledger_entries_stream_idx (stream_id)    kept: the unsettled candidates of a
--       settlement (settlement_query.go, EXISTS per payment's stream).
--   ledger_entries_period_idx                kept: period close and the trial balance
--       (period, account, currency)              (periodwriter.go sums WHERE period = $1
--       GROUP BY account, currency; periods.go counts per period).
--   ledger_entries_console_volume_idx        kept: the console's daily volume chart
--       (partial, revenue and disputes)          (inbox_query.go DailyVolume), index-only.
--   ledger_entries_console_payouts_idx       DROPPED: no query reads it. The
--       (partial, bank:payouts/payout.paid)      console's payouts pages read the payouts
--       and settlement_lines tables (settlement_query.go), never ledger_entries.
--
-- `onceledger rebuild` builds on its shadow the indexes the live table
-- has (readmodel/shadow_index.go reads them from pg_index), so a rebuild
-- after this migration builds ten.

-- +goose Up
DROP INDEX IF EXISTS ledger_entries_console_payouts_idx;

-- +goose Down
CREATE INDEX ledger_entries_console_payouts_idx ON ledger_entries (occurred_at, stream_id)
    WHERE account = 'bank:payouts' AND event_type = 'payout.paid';
