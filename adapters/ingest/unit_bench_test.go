package ingest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/onceledger/onceledger/domain/delivery"
)

// memTx is a BatchTx that answers every gate as a first arrival on an
// empty stream and takes every append: the shared unit's own work, in
// memory, without a database.
type memTx struct{}

func (memTx) GateAll(_ context.Context, items []GateItem) ([]Gated, error) {
	out := make([]Gated, len(items))
	for i := range out {
		out[i] = Gated{Inserted: true}
	}
	return out, nil
}
func (memTx) AppendAll(context.Context, []BatchAppend) ([]int, error) { return nil, nil }
func (memTx) Withdraw(context.Context, []InboxKey) error              { return nil }

func unitDeliveries(n int) []delivery.Event {
	evs := make([]delivery.Event, n)
	for i := range evs {
		pay := fmt.Sprintf("pi_%06d", i)
		evs[i] = delivery.Event{Provider: "stripe", DedupKey: "evt_" + pay, Type: "charge.succeeded", PaymentKey: pay,
			OccurredAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), PayloadHash: "h",
			Raw: []byte(`{}`), Facts: []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: "ch_" + pay, Amount: 1000, Fee: 59, Currency: "USD"}}}
	}
	return evs
}

// BenchmarkSharedUnit is the server's work per delivery in a shared unit
// of 32 first arrivals (gate items, decisions on the folds, the appends'
// events), without the database: go test -run '^$' -bench SharedUnit
// -benchmem ./adapters/ingest (ns and allocations per unit of 32).
func BenchmarkSharedUnit(b *testing.B) {
	s := New(nil, PaymentDecider{}, Options{})
	evs := unitDeliveries(32)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := s.sharedUnit(context.Background(), memTx{}, unitMembers{evs: evs}, "bench", nil); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSharedUnitAllocationsPerDelivery reports the allocations per
// delivery of a shared unit's own work.
func TestSharedUnitAllocationsPerDelivery(t *testing.T) {
	s := New(nil, PaymentDecider{}, Options{})
	evs := unitDeliveries(32)
	n := testing.AllocsPerRun(20, func() {
		if _, _, err := s.sharedUnit(context.Background(), memTx{}, unitMembers{evs: evs}, "bench", nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.1f allocations per delivery (units of %d)", n/float64(len(evs)), len(evs))
}
