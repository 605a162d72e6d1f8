package outbound

import (
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
)

// Public types of the provider-balance events (domain/assertion).
const (
	BalanceAsserted       = "balance.asserted"
	BalanceOpeningBalance = "balance.opening_recorded"
	LedgerAdjusted        = "ledger.adjusted"
	BalanceItemResolved   = "balance.item_resolved"
	BalanceItemReopened   = "balance.item_reopened"
)

func init() {
	publicType[assertion.TypeStated] = BalanceAsserted
	publicType[assertion.TypeOpened] = BalanceOpeningBalance
	publicType[assertion.TypeAdjusted] = LedgerAdjusted
	publicType[assertion.TypeItemResolved] = BalanceItemResolved
	publicType[assertion.TypeItemReopened] = BalanceItemReopened
	descriptions[BalanceItemResolved] = "An operator marked a `balance_mismatch` item handled, with a note (no money moved; `ledger.adjusted` moves money)."
	descriptions[BalanceItemReopened] = "An operator reopened a `balance_mismatch` item, with a note."
	descriptions[BalanceAsserted] = "A provider, a bank or a person stated the balance of an account: `points` lists each `as_of` and `amount`. The ledger compares each with its own balance as of then (GET /v1/balance-assertions); a difference opens `balance_mismatch`."
	descriptions[BalanceOpeningBalance] = "An opening balance of an account, posted against `equity:opening_balances`, with the actor and note."
	descriptions[LedgerAdjusted] = "An accountant's adjustment: `postings` balanced per currency, effective at `effective_at`, resolving `item_id` (or undoing the adjustment `reverses`)."
}

// fromAssertion maps an event of an assertion or adjustment stream.
func fromAssertion(out Event, r eventstore.RecordedEvent) (Event, error) {
	e, err := assertion.Decode(r.Type, r.Data)
	if err != nil {
		return Event{}, err
	}
	at, provider := assertion.Effective(e)
	out.OccurredAt, out.Provider = at.UTC(), provider
	out.Data = assertionData(e)
	return checked(out, r.Type)
}

func assertionData(e assertion.Event) map[string]any {
	switch e := e.(type) {
	case assertion.Stated:
		pts := make([]map[string]any, len(e.Points))
		for i, p := range e.Points {
			pts[i] = map[string]any{"as_of": p.AsOf.UTC().Format(time.RFC3339Nano), "amount": p.Amount,
				"amount_decimal": money.FormatMinor(p.Amount, e.Currency)}
		}
		d := map[string]any{"account": e.Account, "currency": string(e.Currency), "source": e.Source, "points": pts}
		if e.Actor != "" {
			d["actor"], d["note"] = e.Actor, e.Note
		}
		return d
	case assertion.Opened:
		return amounts(map[string]any{"id": e.ID.String(), "account": e.Account, "as_of": e.AsOf.UTC().Format(time.RFC3339Nano),
			"actor": e.Actor, "note": e.Note}, e.Amount, e.Currency)
	case assertion.Adjusted:
		d := map[string]any{"id": e.ID.String(), "item_id": e.ItemID, "effective_at": e.EffectiveAt.UTC().Format(time.RFC3339Nano),
			"postings": postingsData(e.Postings), "actor": e.Actor, "note": e.Note}
		if e.Reverses.String() != "00000000-0000-0000-0000-000000000000" {
			d["reverses"] = e.Reverses.String()
		}
		return d
	case assertion.ItemResolved:
		return map[string]any{"kind": e.Kind, "key": e.Key, "actor": e.Actor, "note": e.Note}
	case assertion.ItemReopened:
		return map[string]any{"kind": e.Kind, "key": e.Key, "actor": e.Actor, "note": e.Note}
	}
	return nil
}

func postingsData(ps []ledger.Posting) []map[string]any {
	out := make([]map[string]any, len(ps))
	for i, p := range ps {
		out[i] = amounts(map[string]any{"account": p.Account}, p.Amount, p.Currency)
	}
	return out
}

// assertionExamples are the examples of the provider-balance types.
func assertionExamples() []eventstore.RecordedEvent {
	acct := ledger.ProviderBalance("stripe")
	stream := assertion.StreamID(acct, "USD")
	var recs []eventstore.RecordedEvent
	for i, e := range []assertion.Event{
		assertion.Stated{Provider: "stripe", Account: acct, Currency: "USD", Source: "stripe GET /v1/balance", At: exampleAt,
			Points: []assertion.Point{{Key: "sync-1", AsOf: exampleAt, Amount: 123456}}},
		assertion.Opened{Provider: "stripe", Account: acct, Currency: "USD", AsOf: exampleAt, Amount: 50000, Actor: "alice",
			Note: "balance before onceledger", At: exampleAt},
		assertion.Adjusted{ItemID: "assertion-provider:stripe:balance-USD/balance_mismatch/provider:stripe:balance%2FUSD",
			Provider: "stripe", EffectiveAt: exampleAt, Actor: "alice", Note: "fee Stripe charged without a webhook", At: exampleAt,
			Postings: []ledger.Posting{{Account: "expenses:fees:stripe", Currency: "USD", Amount: 100}, {Account: acct, Currency: "USD", Amount: -100}}},
		assertion.ItemResolved{Kind: assertion.ReconBalanceMismatch, Key: "provider:stripe:balance/USD", Actor: "alice", Note: "Stripe confirmed", At: exampleAt},
		assertion.ItemReopened{Kind: assertion.ReconBalanceMismatch, Key: "provider:stripe:balance/USD", Actor: "alice", Note: "not after all", At: exampleAt},
	} {
		typ, data, err := assertion.Encode(e)
		if err != nil {
			panic(err) // the examples are fixed: a failure is a programming error
		}
		recs = append(recs, exampleRecord(stream, typ, data, 200+i))
	}
	return recs
}
