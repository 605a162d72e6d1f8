package stripe

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
)

// A retrieved PaymentIntent (the object of the payment_intent.succeeded
// fixture, latest_charge expanded as the asker asks) carries the webhook's
// fact: same payment, charge, amount and facts hash.
func TestQueryAnswerIsTheWebhooksFact(t *testing.T) {
	raw := providertest.Fixture(t, "payment_intent.succeeded.json")
	hook, err := normalize(raw)
	require.NoError(t, err)
	var event struct {
		Data struct {
			Object map[string]any `json:"object"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(raw, &event))
	pi := event.Data.Object
	pi["latest_charge"] = map[string]any{"id": pi["latest_charge"], "object": "charge", "created": 1764410400,
		"balance_transaction": "txn_1"}
	answer, err := json.Marshal(pi)
	require.NoError(t, err)

	q, err := Query(pi["id"].(string), answer)
	require.NoError(t, err)
	require.Equal(t, QueryPaid, q.State)
	assert.Equal(t, hook.FactsHash(), q.Event.FactsHash())
	assert.Equal(t, hook.Facts, q.Event.Facts)
	assert.Equal(t, hook.PaymentKey, q.Event.PaymentKey)
	assert.Equal(t, "query_"+hook.PaymentKey, q.Event.DedupKey)
	again, err := (&Adapter{}).Renormalize("", q.Event.Raw)
	require.NoError(t, err)
	assert.Equal(t, q.Event.FactsHash(), again.FactsHash())

	_, err = Query("pi_other", answer)
	require.ErrorIs(t, err, ErrNotAsked, "an answer about another object is refused")
	for status, want := range map[string]QueryState{"processing": QueryPending, "requires_payment_method": QueryPending,
		"requires_action": QueryPending, "canceled": QueryClosed} {
		pi["status"] = status
		b, err := json.Marshal(pi)
		require.NoError(t, err)
		q, err := Query(pi["id"].(string), b)
		require.NoError(t, err)
		assert.Equal(t, want, q.State, status)
	}
}
