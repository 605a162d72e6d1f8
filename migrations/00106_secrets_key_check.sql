-- Issue 33: a wrong but well-formed ONCELEDGER_SECRETS_KEY started without
-- a word and failed later, at the first POST of each subscription. One row
-- holds a known text sealed with the key (outbox.Sealer, AES-256-GCM),
-- written by serve at its first start with a key (or the first time a
-- subscription is created); serve opens it at start and refuses to run,
-- naming the variable, when it does not open. Not granted to
-- onceledger_readonly, like the sealed secrets themselves.

-- +goose Up
CREATE TABLE secrets_key_check (
    id         boolean PRIMARY KEY DEFAULT true CHECK (id),
    sealed     bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE secrets_key_check;
