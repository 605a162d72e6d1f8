-- The charge→payment links the webhooks recorded (issue 24): a settlement
-- report that cannot name a line's payment (a Stripe report without the
-- payment_intent_id column) is linked through the payment key the
-- provider's webhooks gave the line's capture. The inbox's normalized
-- delivery holds both (facts[0].business_id, the charge; payment_key, the
-- PaymentIntent); this index makes that read one index probe. Partial: only
-- deliveries whose first fact is a capture, authorization or failure, so
-- settlement lines (kind "settled") never pay for it.

-- +goose Up
CREATE INDEX webhook_inbox_capture_link_idx ON webhook_inbox (provider, (normalized #>> '{facts,0,business_id}'))
    WHERE normalized #>> '{facts,0,kind}' IN ('captured', 'authorized', 'failed');

-- +goose Down
DROP INDEX webhook_inbox_capture_link_idx;
