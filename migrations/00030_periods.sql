-- Accounting periods. Every entry has two times and is booked into a period:
--
--   effective_at  when the provider says it happened (= occurred_at)
--   booked_at     when the ledger recorded it (= recorded_at, the event
--                 store's time of the event)
--   period        YYYY-MM in the reporting time zone (ONCELEDGER_REPORTING_TZ):
--                 the period the entry is booked into
--   late_adjustment  the entry's effective period was closed when it was
--                 booked, so it went into the first open period instead;
--                 adjusts_period names the closed period it adjusts
--
-- effective_at and booked_at are generated from the older occurred_at and
-- recorded_at columns, which stay for compatibility: one value, two names,
-- never two values.
--
-- The calendar (closes and reopens) is the "periods" event stream; the
-- ledger projection folds it in feed order, so `rebuild` books every entry
-- into the same period again, and freezes each closed period's trial
-- balance into period_balances with its content hash.

-- +goose Up
ALTER TABLE ledger_entries
    ADD COLUMN effective_at    timestamptz GENERATED ALWAYS AS (occurred_at) STORED,
    ADD COLUMN booked_at       timestamptz GENERATED ALWAYS AS (recorded_at) STORED,
    ADD COLUMN period          text,
    ADD COLUMN late_adjustment boolean NOT NULL DEFAULT false,
    ADD COLUMN adjusts_period  text;

-- Entries projected before periods existed: no period was ever closed, so
-- each is in its effective month. In UTC: the migration cannot know the
-- reporting zone; with another zone, `onceledger rebuild` relabels them
-- (harmless while nothing is closed).
UPDATE ledger_entries SET period = to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM');

ALTER TABLE ledger_entries
    ALTER COLUMN period SET NOT NULL,
    ADD CONSTRAINT ledger_entries_period_check CHECK (period ~ '^[0-9]{4}-(0[1-9]|1[0-2])$'),
    ADD CONSTRAINT ledger_entries_adjusts_period_check
        CHECK (CASE WHEN late_adjustment THEN adjusts_period IS NOT NULL AND adjusts_period < period
                    ELSE adjusts_period IS NULL END);

CREATE INDEX ledger_entries_period_idx ON ledger_entries (period, account, currency);

-- One row per period that has entries or was ever closed. status is what
-- the calendar says now; the close_* columns describe the last close (a
-- period closed at the start of the books is closed by the first close of
-- all, the one in books_start), the reopen_* ones the last reopen.
CREATE TABLE periods (
    period          text        NOT NULL CHECK (period ~ '^[0-9]{4}-(0[1-9]|1[0-2])$'),
    status          text        NOT NULL CHECK (status IN ('open', 'closed')),
    -- The first period ever closed: every earlier period was closed with it.
    books_start     boolean     NOT NULL DEFAULT false,
    -- IANA name of the reporting time zone the books were closed in.
    zone            text,
    closed_at       timestamptz,
    closed_by       text,
    close_note      text,
    close_event_id  uuid,
    reopened_at     timestamptz,
    reopened_by     text,
    reopen_reason   text,
    reopen_event_id uuid,
    -- SHA-256 (hex) of the frozen trial balance (domain/period.Hash); NULL
    -- while open.
    content_hash    text,
    CONSTRAINT periods_pkey PRIMARY KEY (period),
    CONSTRAINT periods_closed_hash_check CHECK ((status = 'closed') = (content_hash IS NOT NULL))
);

-- A closed period's trial balance as frozen when it closed, per account and
-- currency: opening (the closing of everything booked before it), debits and
-- credits (magnitudes of the period's positive and negative entries) and
-- closing = opening + debits - credits. content_hash repeats the period's
-- hash. Rows exist only for closed periods; a reopen removes them and the
-- next close freezes them again.
CREATE TABLE period_balances (
    period       text   NOT NULL,
    account      text   NOT NULL,
    currency     text   NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    opening      bigint NOT NULL,
    debits       bigint NOT NULL CHECK (debits >= 0),
    credits      bigint NOT NULL CHECK (credits >= 0),
    closing      bigint NOT NULL,
    content_hash text   NOT NULL,
    CONSTRAINT period_balances_pkey PRIMARY KEY (period, account, currency)
);

GRANT SELECT ON periods, period_balances TO onceledger_readonly;

-- +goose Down
DROP TABLE period_balances;
DROP TABLE periods;
DROP INDEX ledger_entries_period_idx;
ALTER TABLE ledger_entries
    DROP CONSTRAINT ledger_entries_adjusts_period_check,
    DROP CONSTRAINT ledger_entries_period_check,
    DROP COLUMN adjusts_period,
    DROP COLUMN late_adjustment,
    DROP COLUMN period,
    DROP COLUMN booked_at,
    DROP COLUMN effective_at;
