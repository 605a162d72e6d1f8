package outbound

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/onceledger/onceledger/domain/settlement"
)

// A settlement line that moved its net against a reserve or the bank says
// which (a subscriber booking the line would otherwise put a reserve hold
// on the provider balance); a line without one carries no such key.
func TestSettlementLineCarriesItsCounterpart(t *testing.T) {
	l := settlement.Line{Provider: "adyen", Kind: settlement.KindAdjustment, LineID: "l1", Gross: -500, Net: -500,
		Currency: "EUR", Counterpart: settlement.CounterpartReserve}
	assert.Equal(t, "reserve", lineData(l)["counterpart"])
	l.Counterpart = ""
	assert.NotContains(t, lineData(l), "counterpart")
}
