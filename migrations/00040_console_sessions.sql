-- Console sessions (adapters/console), shared by every instance of the
-- service so that a browser may be served by any of them and signing out
-- ends the session everywhere. Only the SHA-256 of the session id (the
-- cookie's secret) is stored, and of the token signed in with the SHA-256
-- too: the table holds nothing a reader could present.

-- +goose Up
CREATE TABLE console_sessions (
    id_hash      bytea       NOT NULL CHECK (octet_length(id_hash) = 32),
    actor        text        NOT NULL CHECK (actor <> ''),
    role         text        NOT NULL CHECK (role IN ('read', 'admin')),
    token_digest bytea       NOT NULL CHECK (octet_length(token_digest) = 32),
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    CONSTRAINT console_sessions_pkey PRIMARY KEY (id_hash)
);

-- Expired sessions are deleted in batches, oldest first.
CREATE INDEX console_sessions_expires_idx ON console_sessions (expires_at);

-- +goose Down
DROP TABLE console_sessions;
