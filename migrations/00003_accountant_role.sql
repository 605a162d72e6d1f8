-- The accountants' read-only role and the views they start from. The role
-- cannot log in; grant it to login roles (GRANT onceledger_readonly TO alice).
-- `onceledger rebuild` swaps read-model tables in place and carries their
-- grants and these views over to the new tables.

-- +goose Up

-- Roles are cluster-wide, so another database on the server may have
-- created it already, possibly concurrently: tolerate both.
-- +goose StatementBegin
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'onceledger_readonly') THEN
        CREATE ROLE onceledger_readonly NOLOGIN;
    END IF;
EXCEPTION
    WHEN duplicate_object OR unique_violation THEN NULL;
END
$$;
-- +goose StatementEnd

GRANT USAGE ON SCHEMA public TO onceledger_readonly;
GRANT SELECT ON payments, ledger_entries, account_balances, reconciliation_items,
    projection_checkpoints, webhook_inbox TO onceledger_readonly;

-- Each provider's balance with us, per currency.
CREATE VIEW v_balances_by_provider AS
SELECT split_part(account, ':', 2) AS provider,
       currency,
       balance,
       entry_count,
       updated_at
FROM account_balances
WHERE account LIKE 'provider:%:balance';

-- Reconciliation items still waiting for someone, oldest first.
CREATE VIEW v_open_reconciliation AS
SELECT provider,
       payment_id,
       stream_id,
       kind,
       item_key,
       details,
       opened_at
FROM reconciliation_items
WHERE status = 'open'
ORDER BY opened_at NULLS FIRST, stream_id, kind, item_key;

-- Per UTC day (of occurred_at), provider and currency, in positive minor
-- units: captured (gross sales), fees, refunded (net of reversals),
-- disputed (opened), dispute_lost and paid_out.
CREATE VIEW v_daily_totals AS
SELECT (occurred_at AT TIME ZONE 'UTC')::date AS day,
       provider,
       currency,
       coalesce(sum(-amount) FILTER (WHERE account = 'revenue:sales'), 0)::bigint AS captured_amount,
       coalesce(sum(amount) FILTER (WHERE account LIKE 'expenses:fees:%'), 0)::bigint AS fee_amount,
       coalesce(sum(amount) FILTER (WHERE account = 'revenue:refunds'), 0)::bigint AS refunded_amount,
       coalesce(sum(amount) FILTER (WHERE account LIKE 'receivable:disputes:%'
                                      AND event_type = 'dispute.opened'), 0)::bigint AS disputed_amount,
       coalesce(sum(amount) FILTER (WHERE account = 'expenses:disputes'), 0)::bigint AS dispute_lost_amount,
       coalesce(sum(amount) FILTER (WHERE account = 'bank:payouts'), 0)::bigint AS paid_out_amount
FROM ledger_entries
GROUP BY 1, 2, 3;

GRANT SELECT ON v_balances_by_provider, v_open_reconciliation, v_daily_totals TO onceledger_readonly;

-- +goose Down
DROP VIEW v_daily_totals;
DROP VIEW v_open_reconciliation;
DROP VIEW v_balances_by_provider;
REVOKE ALL ON payments, ledger_entries, account_balances, reconciliation_items,
    projection_checkpoints, webhook_inbox FROM onceledger_readonly;
REVOKE USAGE ON SCHEMA public FROM onceledger_readonly;

-- The role stays: roles are cluster-wide, and other databases on the server
-- (or a concurrent migration of one) may rely on it.
