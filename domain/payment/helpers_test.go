package payment

import (
	"reflect"
	"testing"
	"time"

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
	if err != nil {
		s.t.Fatalf("Decide(%s): %v", ev.DedupKey, err)
	}
	for _, e := range out {
		if err := ledger.Check(Postings(e)); err != nil {
			s.t.Fatalf("%s: %v", e.Type(), err)
		}
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
	if g := types(got); !reflect.DeepEqual(g, want) {
		t.Fatalf("events = %v, want %v", g, want)
	}
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
