// Package bankimport imports bank statements: a file is parsed whole first
// (adapters/bankfile: its own sums checked, nothing recorded if one fails),
// then each booked entry is a delivery through the same inbox gate as
// webhooks and settlement lines (ingest.Service), keyed by the account and
// the bank's reference of the entry, into the account's stream
// (domain/bankstatement), followed by its statements and the payouts the
// account expects. Decider routes a bank account's deliveries to the bank
// aggregate and every other one to the payments'.
package bankimport

import (
	"encoding/json"
	"fmt"

	"github.com/onceledger/onceledger/adapters/command"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/domain/bankstatement"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/payment"
)

// Decider decides a bank account's deliveries on its stream
// (domain/bankstatement) and hands every other delivery to Payments
// (normally ingest.PaymentDecider{}). It keeps folds of the bank streams
// between decisions where the ingest service can (ingest.Folder), so a
// line costs the same whatever the account's stream holds.
type Decider struct {
	Payments interface {
		ingest.Decider
		ingest.Folder
	}
	// ArrivalDays is ONCELEDGER_BANK_ARRIVAL_DAYS (<= 0: the default, 5).
	ArrivalDays int
}

var (
	_ ingest.Decider = Decider{}
	_ ingest.Folder  = Decider{}
)

func isBank(ev delivery.Event) bool {
	_, ok := ev.BankInput()
	return ok
}

// Decide implements ingest.Decider.
func (d Decider) Decide(history []eventstore.RecordedEvent, ev delivery.Event) ([]eventstore.EventData, error) {
	if !isBank(ev) {
		return d.Payments.Decide(history, ev)
	}
	f := d.newFold(ev)
	if err := f.Apply(history); err != nil {
		return nil, err
	}
	return f.Decide(ev)
}

// Fold implements ingest.Folder.
func (d Decider) Fold(ev delivery.Event) ingest.Fold {
	if !isBank(ev) {
		return d.Payments.Fold(ev)
	}
	return d.newFold(ev)
}

func (d Decider) newFold(ev delivery.Event) *bankFold {
	return &bankFold{s: bankstatement.NewState(ev.PaymentKey, d.ArrivalDays)}
}

// Conflict implements ingest.Decider: a redelivery of a known key with other
// facts (a statement line the bank changed) is flagged on the account's
// stream, once per different facts; the first facts stand.
func (d Decider) Conflict(history []eventstore.RecordedEvent, ev delivery.Event, firstHash string) ([]eventstore.EventData, error) {
	if !isBank(ev) {
		return d.Payments.Conflict(history, ev, firstHash)
	}
	key := ev.DedupKey + "@" + ev.FactsHash()
	for _, h := range history {
		if h.Type != payment.TypeFlagged {
			continue
		}
		e, err := payment.Decode(h.Type, h.Data)
		if err != nil {
			return nil, fmt.Errorf("decode %s/%d: %w", h.StreamID, h.Version, err)
		}
		if f, ok := e.(payment.Flagged); ok && f.Kind == payment.ReconConflictingRedelivery && f.Key == key {
			return nil, nil
		}
	}
	flag := payment.Flagged{
		Meta: payment.Meta{Provider: ev.Provider, PaymentKey: ev.PaymentKey, DedupKey: ev.DedupKey, OccurredAt: ev.OccurredAt},
		Kind: payment.ReconConflictingRedelivery, Key: key,
		Details: fmt.Sprintf("bank entry %s read again with different facts (first sha256 %s, now %s); the first stand",
			ev.DedupKey, firstHash, ev.PayloadHash),
	}
	return encode(ev, []payment.Event{flag}, "conflict:"+ev.FactsHash())
}

// bankFold is a bank stream folded (ingest.Fold).
type bankFold struct{ s *bankstatement.State }

func (f *bankFold) Len() int { return f.s.Len() }

func (f *bankFold) Apply(events []eventstore.RecordedEvent) error {
	past, err := command.Decode(events, payment.Decode)
	if err != nil {
		return err
	}
	for _, e := range past {
		if err := f.s.Apply(e); err != nil {
			return err
		}
	}
	return nil
}

func (f *bankFold) Decide(ev delivery.Event) ([]eventstore.EventData, error) {
	in, _ := ev.BankInput()
	decided, err := f.s.Decide(bankstatement.Delivery{DedupKey: ev.DedupKey, Input: *in})
	if err != nil {
		return nil, fmt.Errorf("decide %s on %s: %w", ev.DedupKey, ev.StreamID(), err)
	}
	return encode(ev, decided, "")
}

// metadata is what ingest stores with every event (same names).
type metadata struct {
	Provider     string `json:"provider"`
	DedupKey     string `json:"dedup_key"`
	ProviderType string `json:"provider_type,omitempty"`
	PayloadHash  string `json:"payload_hash"`
}

func encode(ev delivery.Event, events []payment.Event, idSalt string) ([]eventstore.EventData, error) {
	if len(events) == 0 {
		return nil, nil
	}
	meta, err := json.Marshal(metadata{Provider: ev.Provider, DedupKey: ev.DedupKey, ProviderType: ev.Type, PayloadHash: ev.PayloadHash})
	if err != nil {
		return nil, err
	}
	out := make([]eventstore.EventData, 0, len(events))
	for i, e := range events {
		if err := ledger.Check(payment.Postings(e)); err != nil {
			return nil, fmt.Errorf("refusing to record %s for %s: %w", e.Type(), ev.DedupKey, err)
		}
		typ, data, err := payment.Encode(e)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", e.Type(), err)
		}
		out = append(out, eventstore.EventData{ID: payment.EventID(ev.Provider, ev.DedupKey+idSalt, i), Type: typ, Data: data, Metadata: meta})
	}
	return out, nil
}
