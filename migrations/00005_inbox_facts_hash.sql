-- A redelivery conflicts with the first arrival of its dedup key only when
-- its normalized facts differ (delivery.Event.FactsHash): providers re-render
-- envelopes and timestamps on a retry, so different bytes alone are a plain
-- duplicate. The first arrival's facts hash is kept next to its payload hash.
--
-- Rows written before this migration have none (NULL): the hash is a Go
-- function of the normalized delivery, so the recorder computes it from
-- the row's `normalized` column when it needs it, instead of SQL repeating
-- the canonical encoding here.

-- +goose Up
ALTER TABLE webhook_inbox ADD COLUMN facts_hash text;
COMMENT ON COLUMN webhook_inbox.facts_hash IS
    'hex SHA-256 of the normalized facts (delivery.Event.FactsHash); NULL for rows older than migration 00005';
COMMENT ON TABLE webhook_conflicts IS
    'redeliveries of a known dedup key with different facts, one row per distinct payload, for reconciliation';

-- +goose Down
COMMENT ON TABLE webhook_conflicts IS NULL;
ALTER TABLE webhook_inbox DROP COLUMN facts_hash;
