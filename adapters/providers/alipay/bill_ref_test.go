package alipay

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/delivery"
)

// A trade bill line carries the merchant's order (商户订单号) as a reference,
// not a fact: an expected payment registered under it finds a capture the
// bill told first.
func TestTradeBillLineNamesTheMerchantOrder(t *testing.T) {
	recs := parseBillFile(t, "trade.csv")
	require.NotEmpty(t, recs)
	l := recs[0].Line
	assert.Equal(t, "ORDER-1001", l.MerchantRef)
	withoutRef := l
	withoutRef.MerchantRef = ""
	assert.Equal(t, withoutRef.FactsHash(), l.FactsHash(), "not a fact")
	ev := delivery.Settled(l, recs[0].Raw)
	assert.Equal(t, []string{"ORDER-1001"}, ev.References)
}
