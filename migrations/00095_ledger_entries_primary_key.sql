-- ledger_entries is keyed by what identifies an entry, (event_id,
-- posting_index): the key the projector's insert conflicts on (ON CONFLICT
-- (event_id, posting_index), writer.go) and the rebuild's row key
-- (readmodel/shadow.go). The old primary key on the serial id served no
-- query (migration 00094 lists every index and its reader): the id column
-- stays, still drawn from its sequence, for the few reads that order a
-- handful of rows by it (periods.go), and loses its index. One index less
-- for every posting written, and for every rebuild to build (issue 28).
--
-- On an existing database this builds the new key's index once (the unique
-- constraint's index cannot become the primary key's: it backs the
-- constraint being dropped), under an exclusive lock of the table.

-- +goose Up
ALTER TABLE ledger_entries
    DROP CONSTRAINT ledger_entries_pkey,
    DROP CONSTRAINT ledger_entries_event_posting_key,
    ADD CONSTRAINT ledger_entries_pkey PRIMARY KEY (event_id, posting_index);

-- +goose Down
ALTER TABLE ledger_entries
    DROP CONSTRAINT ledger_entries_pkey,
    ADD CONSTRAINT ledger_entries_event_posting_key UNIQUE (event_id, posting_index),
    ADD CONSTRAINT ledger_entries_pkey PRIMARY KEY (id);
