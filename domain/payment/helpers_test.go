package payment

import (
	"reflect"
	"testing"
	"time"

	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/provider"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 123456789, time.UTC)

// stream is a test payment stream: it decides deliveries against its history
// and appends what they add, as the ingestion service does.
type stream struct {
	t       testing.TB
	history []Event
}

func (s *stream) deliver(ev provider.Event) []Event {
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

func delivery(key string, facts ...provider.Fact) provider.Event {
	return provider.Event{
		Provider:   "stripe",
		DedupKey:   key,
		Type:       "test",
		PaymentKey: "pi_1",
		OccurredAt: t0,
		Facts:      facts,
	}
}

func capture(id string, amount, fee int64) provider.Fact {
	return provider.Fact{Kind: provider.KindCaptured, BusinessID: id, Amount: amount, Fee: fee, Currency: "USD"}
}

func refundFact(id string, amount int64) provider.Fact {
	return provider.Fact{Kind: provider.KindRefunded, BusinessID: id, Amount: amount, Currency: "USD"}
}

func refundFailed(id string) provider.Fact {
	return provider.Fact{Kind: provider.KindRefundFailed, BusinessID: id, Currency: "USD"}
}

func disputeFact(k provider.Kind, id string, amount int64) provider.Fact {
	return provider.Fact{Kind: k, BusinessID: id, Amount: amount, Currency: "USD"}
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
