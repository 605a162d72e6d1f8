package wechatpay

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
	"github.com/onceledger/onceledger/adapters/providers/report"
)

// A trade bill line carries the merchant's order (商户订单号) as a
// reference: an expected payment registered under it finds a capture the
// bill told first.
func TestTradeBillLineNamesTheMerchantOrder(t *testing.T) {
	recs, err := providertest.ParseReport(ParseSettlement, billFile(t, "tradebill.csv"), report.Options{})
	require.NoError(t, err)
	require.NotEmpty(t, recs)
	assert.NotEmpty(t, recs[0].Line.MerchantRef)
	assert.NotContains(t, recs[0].Line.MerchantRef, "`", "the bill's backtick prefix is not part of it")
}
