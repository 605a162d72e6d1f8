-- What a bank statement line may name a payout by (issue 37): the trace id
-- the provider's banking partner gave it (Stripe trace_id.value, filled in
-- after the payout is paid: payout.traced) and its statement descriptor
-- (Stripe statement_descriptor); and what matched each banked payout to
-- its line (trace_id, reference, descriptor, amount), so that a payout
-- whose trace id became known after a weaker match is told to the bank
-- accounts again. Written by the payouts projection; `onceledger rebuild
-- payouts` fills them from the events.

-- +goose Up
ALTER TABLE payouts ADD COLUMN trace_id text, ADD COLUMN statement_descriptor text;
ALTER TABLE bank_payouts ADD COLUMN matched_by text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE bank_payouts DROP COLUMN matched_by;
ALTER TABLE payouts DROP COLUMN trace_id, DROP COLUMN statement_descriptor;
