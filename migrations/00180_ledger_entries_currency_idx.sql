-- ledger_entries_currency_idx (currency, occurred_at) is dropped: every
-- posting the ledger projector writes paid for it (issue 40 item 1: index
-- entries are most of Postgres's work per delivery), and no query needs it
-- now that ledger_entries_occurred_at_idx exists beside it.
--
-- Who used it: as_of balances and entry pages of one currency with a time
-- range (readmodel/query.go Balances with AsOf, Entries with From/To and a
-- currency; 00094 lists it as "no other index leads by currency"). Every
-- such query bounds occurred_at (or recorded_at, which has its own index),
-- so ledger_entries_occurred_at_idx finds the range and the currency is a
-- filter on its rows. EXPLAIN (ANALYZE, BUFFERS) on 300,000 entries over 9
-- months, 80 % USD, 15 % EUR, 5 % GBP (the rarest currency: the worst case):
--
--   one day's GBP entries, first page     Index Scan on currency_idx, 71 buffers
--     (Entries, LIMIT 100)                -> Bitmap Scan on occurred_at_idx, 45 buffers
--   GBP balances as of 20 days in         Bitmap Scan on currency_idx, 541 buffers
--     (Balances with AsOf)                -> Bitmap Scan on occurred_at_idx, 600 buffers
--
-- The same plans with occurred_at_idx dropped instead (the other suspect):
-- balances as of a date and the exports' month ranges (export.go) become
-- sequential scans of the whole table, a day's entries of every currency
-- a walk of the feed-order index. That index stays.
--
-- Without a time bound (a currency's entries from the beginning, its
-- balances as of a late date) the plan reads most of the table either way.
-- `onceledger rebuild` builds on its shadow the indexes the live table has
-- (readmodel/shadow_index.go reads pg_index), so nothing else names it.

-- +goose Up
DROP INDEX IF EXISTS ledger_entries_currency_idx;

-- +goose Down
CREATE INDEX ledger_entries_currency_idx ON ledger_entries (currency, occurred_at);
