-- ledger_entries_period_idx on (period) alone instead of (period, account,
-- currency). Its readers (migration 00094's list) select by period only:
-- the close's activity and opening sums (periodwriter.go: WHERE period = $1
-- / period < $1 GROUP BY account, currency, which read each entry's amount
-- from the heap either way and aggregate a few hundred groups by hash) and
-- the entry counts per period (periods.go: count(*) WHERE period = ...,
-- index-only on either). The three-column key cost the most of every
-- index a rebuild builds after its load: entries of one period tie on it,
-- so the sort compares account and currency text for nearly every pair.
-- On 1.7M entries (bench/seed, 1M events) the build took 10s against 1.5s
-- for (period) alone (docs/postgres.conf settings, issue 28).

-- +goose Up
DROP INDEX IF EXISTS ledger_entries_period_idx;
CREATE INDEX ledger_entries_period_idx ON ledger_entries (period);

-- +goose Down
DROP INDEX IF EXISTS ledger_entries_period_idx;
CREATE INDEX ledger_entries_period_idx ON ledger_entries (period, account, currency);
