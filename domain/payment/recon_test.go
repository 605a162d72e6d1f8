package payment_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/payment"
)

func TestResolveAndReopenDecisions(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	meta := payment.Meta{Provider: "stripe", PaymentKey: "pi_1", DedupKey: "evt_1", OccurredAt: now.Add(-time.Hour)}
	flagged := payment.Flagged{Meta: meta, Kind: payment.ReconOverRefund, Key: "pi_1", Details: "refunds exceed captures"}
	history := []payment.Event{flagged}
	cmd := payment.ItemCommand{Kind: payment.ReconOverRefund, Key: "pi_1", Actor: "ops", Note: "refunded by hand", Now: now}

	res, err := payment.DecideResolve(history, cmd)
	require.NoError(t, err)
	assert.Equal(t, payment.Resolved{Meta: payment.Meta{Provider: "stripe", PaymentKey: "pi_1", OccurredAt: now},
		Kind: payment.ReconOverRefund, Key: "pi_1", Actor: "ops", Note: "refunded by hand"}, res)
	_, err = payment.DecideReopen(history, cmd)
	assert.ErrorIs(t, err, payment.ErrItemOpen)

	history = append(history, res)
	_, err = payment.DecideResolve(history, cmd)
	assert.ErrorIs(t, err, payment.ErrItemResolved)
	reo, err := payment.DecideReopen(history, cmd)
	require.NoError(t, err)
	assert.Equal(t, "ops", reo.Actor)
	history = append(history, reo)
	assert.Equal(t, []payment.ItemState{{Kind: payment.ReconOverRefund, Key: "pi_1", Open: true, Provider: "stripe", PaymentKey: "pi_1"}},
		payment.Items(history))

	// The facts clearing an item resolve it too.
	cleared := append([]payment.Event{flagged}, payment.Cleared{Meta: meta, Kind: payment.ReconOverRefund, Key: "pi_1"})
	_, err = payment.DecideResolve(cleared, cmd)
	assert.ErrorIs(t, err, payment.ErrItemResolved)

	for name, c := range map[string]struct {
		cmd  payment.ItemCommand
		want error
	}{
		"no note":      {payment.ItemCommand{Kind: cmd.Kind, Key: cmd.Key, Actor: "ops", Note: " \t"}, payment.ErrNoteRequired},
		"no actor":     {payment.ItemCommand{Kind: cmd.Kind, Key: cmd.Key, Note: "n"}, payment.ErrActorRequired},
		"unknown item": {payment.ItemCommand{Kind: payment.ReconOverRefund, Key: "pi_2", Actor: "ops", Note: "n"}, payment.ErrItemNotFound},
		"other kind":   {payment.ItemCommand{Kind: payment.ReconAmountMismatch, Key: "pi_1", Actor: "ops", Note: "n"}, payment.ErrItemNotFound},
	} {
		_, err := payment.DecideResolve(history, c.cmd)
		assert.ErrorIs(t, err, c.want, name)
	}
}

// An operator's word changes no money: the actions post nothing and leave
// the payment's summary and its next decisions as they were.
func TestActionsPostNothing(t *testing.T) {
	ev := payment.Resolved{Meta: payment.Meta{Provider: "stripe", PaymentKey: "pi_1"}, Kind: payment.ReconOverRefund, Key: "pi_1", Actor: "ops", Note: "n"}
	assert.Empty(t, payment.Postings(ev))
	assert.Empty(t, payment.Postings(payment.Reopened(ev)))
	for _, e := range []payment.Event{ev, payment.Reopened(ev)} {
		typ, data, err := payment.Encode(e)
		require.NoError(t, err)
		back, err := payment.Decode(typ, data)
		require.NoError(t, err)
		assert.Equal(t, e, back)
		assert.Contains(t, string(data), `"actor":"ops"`)
		assert.Contains(t, string(data), `"note":"n"`)
	}
}
