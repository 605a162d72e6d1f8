-- The sub-merchant of a service provider's payment (WeChat Pay sub_mchid,
-- docs/reference.md): NULL for a direct merchant's payment, and for every
-- row written before it existed (a rebuild fills it in from the events).

-- +goose Up
ALTER TABLE payments ADD COLUMN sub_merchant text;

-- +goose Down
ALTER TABLE payments DROP COLUMN sub_merchant;
