package outbound

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/expectation"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/domain/period"
)

// Every type the domain stores, from its single lists, has a public type and
// an example whose data the mapping builds: a new domain event type without
// its mapping fails here.
func TestEveryDomainTypeIsMapped(t *testing.T) {
	stored := append(append(append(payment.EventTypes(), period.EventTypes()...), assertion.EventTypes()...), expectation.EventTypes()...)
	examples := map[string]bool{}
	for _, ex := range exampleEvents() {
		examples[ex.event.Type()] = true
	}
	for _, e := range expectationExamples() {
		examples[e.Type()] = true
	}
	for _, typ := range append(period.EventTypes(), assertion.EventTypes()...) {
		examples[typ] = true // Examples builds them beside exampleEvents
	}
	for _, typ := range stored {
		pub, ok := PublicType(typ)
		if assert.Truef(t, ok, "stored type %s has no public type", typ) {
			assert.NotEmpty(t, pub)
		}
		assert.Truef(t, examples[typ], "stored type %s has no example", typ)
	}
	assert.Len(t, publicType, len(stored), "publicType maps a type no domain list has")
	public := map[string]string{}
	for internal, pub := range publicType {
		other, dup := public[pub]
		assert.Falsef(t, dup, "%s and %s both map to %s", internal, other, pub)
		public[pub] = internal
	}
	infos, err := Examples()
	require.NoError(t, err)
	require.Len(t, infos, len(stored))
	for _, info := range infos {
		assert.Equal(t, info.Type, info.Example.Type)
		assert.Equal(t, Version, info.Example.Version)
		assert.NotNil(t, info.Example.Data, info.Type)
		assert.NotEmpty(t, info.Description, info.Type)
	}
}

// The contract's minimum vocabulary is there, under exactly these names.
func TestContractTypes(t *testing.T) {
	for _, typ := range []string{"payment.authorized", "payment.captured", "payment.failed", "payment.canceled",
		"refund.succeeded", "refund.failed", "dispute.opened", "dispute.funds_reinstated", "dispute.won",
		"dispute.lost", "payout.paid", "payout.failed", "settlement.line", "reconciliation.opened",
		"reconciliation.resolved", "period.closed", "period.reopened"} {
		assert.Contains(t, Types(), typ)
	}
}
