-- A payout is proven only by its lines in its own currency (CONTRACT,
-- payout_mismatch: "a line in another currency never reconciles it";
-- issue 34 case 7). payouts.lines_by_currency keeps the lines counted per
-- currency ({"EUR": [count, net], ...}); line_count and lines_net are those
-- of the payout's currency once it is known (all lines before: a payout
-- known only from its lines has no currency yet), so status and
-- difference compare like with like. Written by the payouts projection
-- (adapters/postgres/readmodel/settlement.go); existing rows are filled
-- from settlement_lines here, as a rebuild would.

-- +goose Up
ALTER TABLE payouts ADD COLUMN lines_by_currency jsonb NOT NULL DEFAULT '{}';

UPDATE payouts AS p SET lines_by_currency = t.lbc
FROM (
    SELECT provider, payout_id, jsonb_object_agg(currency, jsonb_build_array(n, net)) AS lbc
    FROM (
        SELECT provider, payout_id, currency, count(*) AS n, sum(net)::bigint AS net
        FROM settlement_lines WHERE payout_id <> '' AND kind <> 'payout'
        GROUP BY provider, payout_id, currency
    ) g
    GROUP BY provider, payout_id
) t
WHERE p.provider = t.provider AND p.payout_id = t.payout_id;

UPDATE payouts AS p
SET line_count = coalesce((p.lines_by_currency -> p.currency ->> 0)::bigint, 0),
    lines_net = coalesce((p.lines_by_currency -> p.currency ->> 1)::bigint, 0)
WHERE p.currency IS NOT NULL;

UPDATE payouts AS p
SET status = CASE WHEN p.failed THEN 'failed'
                  WHEN p.paid AND p.line_count = 0 AND p.lines_by_currency = '{}' THEN 'paid'
                  WHEN p.lines_net = p.amount THEN 'reconciled'
                  ELSE 'mismatch' END,
    difference = p.lines_net - p.amount;

-- +goose Down
ALTER TABLE payouts DROP COLUMN lines_by_currency;
