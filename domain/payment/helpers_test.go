package payment

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 123456789, time.UTC)

// stream is a test payment stream: it decides deliveries against its history
// and appends what they add, as the ingestion service does.
type stream struct {
	t       testing.TB
	history []Event
}

func (s *stream) deliver(ev delivery.Event) []Event {
	s.t.Helper()
	out, err := Decide(s.history, ev)
	require.NoErrorf(s.t, err, "Decide(%s)", ev.DedupKey)
	for _, e := range out {
		require.NoErrorf(s.t, ledger.Check(Postings(e)), "%s", e.Type())
	}
	s.history = append(s.history, out...)
	return out
}

func deliveryOf(key string, facts ...delivery.Fact) delivery.Event {
	return delivery.Event{
		Provider:   "stripe",
		DedupKey:   key,
		Type:       "test",
		PaymentKey: "pi_1",
		OccurredAt: t0,
		Facts:      facts,
	}
}

func capture(id string, amount, fee int64) delivery.Fact {
	return delivery.Fact{Kind: delivery.KindCaptured, BusinessID: id, Amount: amount, Fee: fee, Currency: "USD"}
}

func refundFact(id string, amount int64) delivery.Fact {
	return delivery.Fact{Kind: delivery.KindRefunded, BusinessID: id, Amount: amount, Currency: "USD"}
}

func refundFailed(id string) delivery.Fact {
	return delivery.Fact{Kind: delivery.KindRefundFailed, BusinessID: id, Currency: "USD"}
}

func disputeFact(k delivery.Kind, id string, amount int64) delivery.Fact {
	return delivery.Fact{Kind: k, BusinessID: id, Amount: amount, Currency: "USD"}
}

func types(es []Event) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.Type())
	}
	return out
}

func wantTypes(t testing.TB, got []Event, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	require.Equal(t, want, types(got), "events")
}

// wantItem fails the test unless e is a reconciliation item (Flagged or
// Cleared) of kind and key.
func wantItem(t testing.TB, e Event, kind, key string) {
	t.Helper()
	var got reconKey
	switch e := e.(type) {
	case Flagged:
		got = reconKey{e.Kind, e.Key}
	case Cleared:
		got = reconKey{e.Kind, e.Key}
	default:
		require.Failf(t, "not a reconciliation item", "%+v", e)
	}
	require.Equalf(t, reconKey{kind, key}, got, "item = %+v", e)
}

type balanceKey struct {
	account  string
	currency money.Currency
}

// balances sums the postings of history per account and currency, leaving
// out zero balances (an account that netted out is the same as none).
func balances(history []Event) map[balanceKey]int64 {
	b := map[balanceKey]int64{}
	for _, e := range history {
		for _, p := range Postings(e) {
			b[balanceKey{p.Account, p.Currency}] += p.Amount
		}
	}
	for k, v := range b {
		if v == 0 {
			delete(b, k)
		}
	}
	return b
}

// openItems replays Flagged/Cleared into the set of open reconciliation items.
func openItems(history []Event) map[reconKey]bool {
	open := map[reconKey]bool{}
	for _, e := range history {
		switch e := e.(type) {
		case Flagged:
			open[reconKey{e.Kind, e.Key}] = true
		case Cleared:
			delete(open, reconKey{e.Kind, e.Key})
		}
	}
	return open
}
