-- The feed order of ledger entries: (position_commit, position_prepare,
-- event_id, posting_index), the keyset of /v1/ledger/entries pages.
--
-- Pages used to be keyed by ledger_entries.id, a bigserial that a rebuild
-- renumbers when it swaps in its shadow tables, so a cursor taken before a
-- swap pointed into another numbering (an export paging across it repeated
-- or skipped entries). An entry's feed position, event id and posting index
-- come from history itself: a rebuild writes every entry with the same ones,
-- so a cursor built from them stays valid across a swap. The order is the
-- order the ledger projector writes in (feed order, one batch after the
-- other), so entries committed after a cursor was taken land after it.
-- (event_id, posting_index) is unique already, so the whole key is.
--
-- `onceledger rebuild` recreates the index on its shadow from this
-- definition.

-- +goose Up
CREATE UNIQUE INDEX ledger_entries_feed_order_idx
    ON ledger_entries (position_commit, position_prepare, event_id, posting_index);

-- +goose Down
DROP INDEX ledger_entries_feed_order_idx;
