package alipayapi_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/alipay"
	"github.com/onceledger/onceledger/adapters/providers/alipay/alipayapi"
	"github.com/onceledger/onceledger/adapters/providers/alipay/alipayapi/alipayfake"
)

// The trade query against the double: every answer the asker must tell
// apart.
func TestTradeQueryAnswers(t *testing.T) {
	fake, c, _ := setup(t)
	ctx := context.Background()

	_, err := c.TradeQuery(ctx, "NEW")
	var apiErr *alipayapi.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "ACQ.TRADE_NOT_EXIST", apiErr.SubCode)

	fake.SetTrade("WAIT", alipayfake.Trade{TradeNo: "T-WAIT", Status: "WAIT_BUYER_PAY", TotalAmount: "10.00"})
	raw, err := c.TradeQuery(ctx, "WAIT")
	require.NoError(t, err)
	q, err := alipay.Query("", raw)
	require.NoError(t, err)
	assert.Equal(t, alipay.QueryPending, q.State)

	fake.SetTrade("PAID", alipayfake.Trade{TradeNo: "T-PAID", Status: "TRADE_SUCCESS", TotalAmount: "100.00", ReceiptAmount: "80.00",
		SendPayDate: "2026-12-01 10:05:00",
		Vouchers:    []map[string]string{{"id": "V1", "type": "ALIPAY_BIZ_VOUCHER", "amount": "20.00", "merchant_contribute": "20.00", "other_contribute": "0.00"}},
		FundBills:   []map[string]string{{"fund_channel": "ALIPAYACCOUNT", "amount": "80.00"}, {"fund_channel": "MDISCOUNT", "amount": "20.00"}}})
	raw, err = c.TradeQuery(ctx, "PAID")
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"voucher_detail_list"`, "query_options asked for the coupons")
	q, err = alipay.Query("", raw)
	require.NoError(t, err)
	require.Equal(t, alipay.QueryPaid, q.State)
	assert.Equal(t, int64(10000), q.Event.Facts[0].Amount)
	assert.Equal(t, int64(2000), q.Event.Facts[0].Discount)

	fake.SetTrade("CLOSED", alipayfake.Trade{TradeNo: "T-C", Status: "TRADE_CLOSED", TotalAmount: "1.00"})
	raw, err = c.TradeQuery(ctx, "CLOSED")
	require.NoError(t, err)
	q, err = alipay.Query("", raw)
	require.NoError(t, err)
	assert.Equal(t, alipay.QueryClosed, q.State)

	fake.SetTrade("FORGED", alipayfake.Trade{TradeNo: "T-F", Status: "TRADE_SUCCESS", TotalAmount: "1.00", SendPayDate: "2026-12-01 10:05:00", BadSign: true})
	_, err = c.TradeQuery(ctx, "FORGED")
	require.ErrorIs(t, err, alipayapi.ErrSignature)

	fake.SetTrade("BUSY", alipayfake.Trade{HTTPStatus: http.StatusTooManyRequests, RetryAfter: "7"})
	_, err = c.TradeQuery(ctx, "BUSY")
	var rl *alipayapi.RateLimitedError
	require.ErrorAs(t, err, &rl)
	assert.Equal(t, 7*time.Second, rl.RetryAfter)

	fake.SetTrade("DOWN", alipayfake.Trade{HTTPStatus: http.StatusBadGateway})
	_, err = c.TradeQuery(ctx, "DOWN")
	require.Error(t, err)
	assert.False(t, errors.As(err, &rl))

	fake.SetTrade("SLOW", alipayfake.Trade{Delay: time.Minute, Status: "WAIT_BUYER_PAY", TradeNo: "T-S", TotalAmount: "1.00"})
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = c.TradeQuery(short, "SLOW")
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
