package wechatpay

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
)

// A transaction query's answer is the TRANSACTION.SUCCESS notification's
// content in plaintext: read as that notification, it carries the same
// facts (hash included) and a stored body a redrive opens.
func TestQueryAnswerIsTheNotificationsFact(t *testing.T) {
	a := adapter(t, nil)
	content := transaction(cents)
	note := providertest.ParseOne(t, a, byCert(t, notification(t, apiKey, notifyID, EventTransactionSuccess, content)))

	answer, err := json.Marshal(content)
	require.NoError(t, err)
	q, err := a.Query(answer)
	require.NoError(t, err)
	require.Equal(t, QueryPaid, q.State)
	assert.Equal(t, note.FactsHash(), q.Event.FactsHash())
	assert.Equal(t, note.Facts, q.Event.Facts)
	assert.Equal(t, note.PaymentKey, q.Event.PaymentKey)
	assert.Equal(t, note.References, q.Event.References)
	assert.Equal(t, note.OccurredAt, q.Event.OccurredAt)
	assert.Equal(t, "query-"+txID, q.Event.DedupKey)
	again, err := a.Renormalize("", q.Event.Raw)
	require.NoError(t, err)
	assert.Equal(t, q.Event.FactsHash(), again.FactsHash())

	refunded, err := json.Marshal(with(content, "trade_state", "REFUND"))
	require.NoError(t, err)
	q, err = a.Query(refunded)
	require.NoError(t, err)
	require.Equal(t, QueryPaid, q.State, "REFUND: paid, refunded since: its capture")
	assert.Equal(t, note.Facts, q.Event.Facts)

	for state, want := range map[string]QueryState{"NOTPAY": QueryPending, "USERPAYING": QueryPending,
		"CLOSED": QueryClosed, "REVOKED": QueryClosed, "PAYERROR": QueryClosed} {
		b, err := json.Marshal(with(content, "trade_state", state, "transaction_id", nil, "success_time", nil))
		require.NoError(t, err)
		q, err := a.Query(b)
		require.NoError(t, err)
		assert.Equal(t, want, q.State, state)
	}
	_, err = a.Query([]byte(`{"trade_state":"SUCCESS"}`))
	require.Error(t, err)
}
