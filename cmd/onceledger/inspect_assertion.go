package main

import (
	"fmt"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/money"
)

// describeAssertion decodes an event of an assertion or adjustment stream
// (domain/assertion) for `onceledger inspect`.
func describeAssertion(v eventView, r eventstore.RecordedEvent) eventView {
	e, err := assertion.Decode(r.Type, r.Data)
	if err != nil {
		v.DecodeError = err.Error()
		return v
	}
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	switch e := e.(type) {
	case assertion.Stated:
		v.fields = []field{{"account", e.Account}, {"currency", string(e.Currency)}, {"source", e.Source},
			{"points", fmt.Sprint(len(e.Points))}, {"actor", e.Actor}, {"note", e.Note}}
		if len(e.Points) > 0 {
			p := e.Points[len(e.Points)-1]
			v.fields = append(v.fields, field{"last", money.FormatMinor(p.Amount, e.Currency) + " as of " + ts(p.AsOf)})
		}
	case assertion.Opened:
		v.fields = []field{{"account", e.Account}, {"as_of", ts(e.AsOf)}, {"actor", e.Actor}, {"note", e.Note}}
	case assertion.Adjusted:
		v.fields = []field{{"id", e.ID.String()}, {"item_id", e.ItemID}, {"effective_at", ts(e.EffectiveAt)},
			{"actor", e.Actor}, {"note", e.Note}}
	case assertion.ItemResolved:
		v.fields = []field{{"kind", e.Kind}, {"key", e.Key}, {"actor", e.Actor}, {"note", e.Note}}
	case assertion.ItemReopened:
		v.fields = []field{{"kind", e.Kind}, {"key", e.Key}, {"actor", e.Actor}, {"note", e.Note}}
	}
	for _, p := range assertion.Postings(e) {
		v.Postings = append(v.Postings, postingView{Account: p.Account, Currency: string(p.Currency), Minor: p.Amount,
			Decimal: signed(money.FormatMinor(p.Amount, p.Currency))})
	}
	return v
}
