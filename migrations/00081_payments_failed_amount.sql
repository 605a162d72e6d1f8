-- A failed payment keeps the amount its attempt was for, when the provider
-- reported it (payment.failed's amount, in the payment's currency): it
-- posts nothing, and an accountant reading a failed payment sees what
-- failed. 0 where no amount is known, as in every row written before.

-- +goose Up
ALTER TABLE payments ADD COLUMN failed_amount bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE payments DROP COLUMN failed_amount;
