-- as_of queries and the journal with time=booked bound the entries by the
-- time the ledger recorded them (recorded_at, the column booked_at is
-- generated from): an index range scan, as occurred_at has for
-- time=effective. `onceledger rebuild` recreates it on its shadow table.

-- +goose Up
CREATE INDEX ledger_entries_recorded_at_idx ON ledger_entries (recorded_at);

-- +goose Down
DROP INDEX ledger_entries_recorded_at_idx;
