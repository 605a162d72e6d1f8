package ingest

import (
	"encoding/json"
	"fmt"

	"github.com/onceledger/onceledger/adapters/command"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/payment"
)

// PaymentDecider is the Decider of the payment domain: it decodes a stream's
// history, lets the aggregate decide, checks that every decided event's
// postings balance and encodes the events with deterministic ids.
type PaymentDecider struct{}

var (
	_ Decider = PaymentDecider{}
	_ Folder  = PaymentDecider{}
)

// Fold implements Folder: the payment aggregate's state (payment.Folded),
// kept between decisions.
func (PaymentDecider) Fold(ev delivery.Event) Fold { return paymentFold{payment.FoldFor(ev)} }

type paymentFold struct{ f *payment.Folded }

func (p paymentFold) Len() int { return p.f.Len() }

func (p paymentFold) Apply(events []eventstore.RecordedEvent) error {
	past, err := command.Decode(events, payment.Decode)
	if err != nil {
		return err
	}
	for _, e := range past {
		if err := p.f.Apply(e); err != nil {
			return err
		}
	}
	return nil
}

func (p paymentFold) Decide(ev delivery.Event) ([]eventstore.EventData, error) {
	decided, err := p.f.Decide(ev)
	if err != nil {
		return nil, fmt.Errorf("decide %s on %s: %w", ev.DedupKey, ev.StreamID(), err)
	}
	return encode(ev, decided, "")
}

func (PaymentDecider) Decide(history []eventstore.RecordedEvent, ev delivery.Event) ([]eventstore.EventData, error) {
	past, err := command.Decode(history, payment.Decode)
	if err != nil {
		return nil, err
	}
	decided, err := payment.Decide(past, ev)
	if err != nil {
		return nil, fmt.Errorf("decide %s on %s: %w", ev.DedupKey, ev.StreamID(), err)
	}
	return encode(ev, decided, "")
}

func (PaymentDecider) Conflict(history []eventstore.RecordedEvent, ev delivery.Event, firstHash string) ([]eventstore.EventData, error) {
	factsHash := ev.FactsHash()
	key := ev.DedupKey + "@" + factsHash
	for _, h := range history {
		if h.Type != payment.TypeFlagged {
			continue
		}
		e, err := payment.Decode(h.Type, h.Data)
		if err != nil {
			return nil, fmt.Errorf("decode %s/%d: %w", h.StreamID, h.Version, err)
		}
		if f, ok := e.(payment.Flagged); ok && f.Kind == payment.ReconConflictingRedelivery && f.Key == key {
			return nil, nil // this conflicting payload is on record already
		}
	}
	flag := payment.Flagged{
		Meta: payment.Meta{
			Provider:   ev.Provider,
			PaymentKey: ev.PaymentKey,
			DedupKey:   ev.DedupKey,
			OccurredAt: ev.OccurredAt,
		},
		Kind: payment.ReconConflictingRedelivery,
		Key:  key,
		Details: fmt.Sprintf("delivery %s redelivered with different facts (first payload sha256 %s, now %s); the first facts stand",
			ev.DedupKey, firstHash, ev.PayloadHash),
	}
	// The id must differ from the first arrival's events (same dedup key), so
	// the conflicting facts' hash takes the place of the index: the same
	// different facts in yet other bytes are flagged once.
	return encode(ev, []payment.Event{flag}, "conflict:"+factsHash)
}

// metadata travels with every stored event, for audit and inspection.
type metadata struct {
	Provider     string `json:"provider"`
	DedupKey     string `json:"dedup_key"`
	ProviderType string `json:"provider_type,omitempty"`
	PayloadHash  string `json:"payload_hash"`
	// References: the merchant's ids the delivery named (delivery.Event
	// References); the payments projection indexes them for the search.
	References []string `json:"references,omitempty"`
}

func encode(ev delivery.Event, events []payment.Event, idSalt string) ([]eventstore.EventData, error) {
	if len(events) == 0 {
		return nil, nil
	}
	meta, err := json.Marshal(metadata{Provider: ev.Provider, DedupKey: ev.DedupKey, ProviderType: ev.Type, PayloadHash: ev.PayloadHash,
		References: ev.References})
	if err != nil {
		return nil, err
	}
	out := make([]eventstore.EventData, 0, len(events))
	for i, e := range events {
		if err := ledger.Check(payment.Postings(e)); err != nil {
			// A bug in the domain, never bad input: refuse to write it.
			return nil, fmt.Errorf("refusing to record %s for %s: %w", e.Type(), ev.DedupKey, err)
		}
		typ, data, err := payment.Encode(e)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", e.Type(), err)
		}
		id := payment.EventID(ev.Provider, ev.DedupKey+idSalt, i)
		out = append(out, eventstore.EventData{ID: id, Type: typ, Data: data, Metadata: meta})
	}
	return out, nil
}
