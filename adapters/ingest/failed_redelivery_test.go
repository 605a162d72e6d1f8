package ingest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/domain/delivery"
)

// A failure recorded before failures carried their attempted amount, and
// redelivered now with it, says the same thing: a duplicate, not a
// conflict. A different amount on a failure that had one is a conflict.
func TestFailureRedeliveredWithItsAmountIsADuplicate(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	before := delivery.Event{Provider: "adyen", DedupKey: "psp_1:AUTHORISATION:false", Type: "AUTHORISATION",
		PaymentKey: "psp_1", OccurredAt: at, Facts: []delivery.Fact{{Kind: delivery.KindFailed, Reason: "Refused"}}}
	now := before
	now.Facts = []delivery.Fact{{Kind: delivery.KindFailed, Amount: 900, Currency: "EUR", Reason: "Refused"}}
	first := ingest.Stored{Status: ingest.StatusApplied, FactsHash: before.FactsHash(), StreamID: before.StreamID()}
	res, stream := ingest.Redelivery(first, now)
	assert.False(t, res.Conflict)
	assert.Empty(t, stream)

	withAmount := ingest.Stored{Status: ingest.StatusApplied, FactsHash: now.FactsHash(), StreamID: now.StreamID()}
	other := now
	other.Facts = []delivery.Fact{{Kind: delivery.KindFailed, Amount: 1900, Currency: "EUR", Reason: "Refused"}}
	res, _ = ingest.Redelivery(withAmount, other)
	assert.True(t, res.Conflict, "a failure's amount changed")
}
