package ingest_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/golden"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/domain/delivery"
)

// storedEventData is an appended event as the stores keep it.
type storedEventData struct {
	ID       string          `json:"id"`
	Type     string          `json:"type"`
	Data     json.RawMessage `json:"data"`
	Metadata json.RawMessage `json:"metadata"`
}

// TestDecidedEventsAsStored keeps what the decider appends stable: the
// events' deterministic ids (a delivery re-driven after a crash must carry
// the ids its first append stored, or EventStoreDB records it twice), their
// data and the metadata every stored event carries (`onceledger inspect`
// reads it).
func TestDecidedEventsAsStored(t *testing.T) {
	ev := delivery.Event{Provider: "stripe", DedupKey: "evt_1", Type: "charge.refunded", PaymentKey: "pi_1",
		OccurredAt: time.Date(2026, 11, 29, 10, 0, 0, 123456789, time.UTC), PayloadHash: "hash-1",
		Facts: []delivery.Fact{
			{Kind: delivery.KindCaptured, BusinessID: "ch_1", Amount: 1000, Fee: 59, Currency: "USD"},
			{Kind: delivery.KindRefunded, BusinessID: "re_1", Amount: 100, Currency: "USD"},
		}}
	decided, err := ingest.PaymentDecider{}.Decide(nil, ev)
	require.NoError(t, err)
	got := make([]storedEventData, len(decided))
	for i, e := range decided {
		got[i] = storedEventData{ID: e.ID.String(), Type: e.Type, Data: e.Data, Metadata: e.Metadata}
	}
	encoded, err := json.MarshalIndent(got, "", "  ")
	require.NoError(t, err)
	stored := golden.Stored(t, filepath.Join("testdata", "decided.json"), encoded)
	assert.Equal(t, string(stored), string(encoded), "what the decider appends changed")
}
