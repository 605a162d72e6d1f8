-- Checkpoints of the outbound relays (docs/events.md): how far each one
-- (the NATS JetStream publisher) has published the feed. Apart from
-- projection_checkpoints on purpose: a relay owns no read-model table, is
-- never rebuilt (a rebuild would re-publish history past any broker's
-- duplicate window), and its position is a feed position (tx_id,
-- global_position) like a projection's.

-- +goose Up
CREATE TABLE outbound_checkpoints (
    name       text PRIMARY KEY,
    commit_pos bigint NOT NULL DEFAULT 0,
    prepare_pos bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE outbound_checkpoints;
