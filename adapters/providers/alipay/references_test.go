package alipay

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A trade notification names the merchant's order (out_trade_no): the
// console's search finds the payment by it.
func TestTradeNamesTheMerchantOrder(t *testing.T) {
	_, ev := verified(t, newAdapter(t), signedBody(t, notification(), signOpts{}))
	assert.Equal(t, []string{"order-1"}, ev.References)
}
