package wechatpayapi_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/wechatpay"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay/wechatpayapi"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay/wechatpayapi/wechatpayfake"
)

// The transaction query against the double: each answer the asker tells
// apart, read by the notification's code.
func TestTransactionQueryAnswers(t *testing.T) {
	fake, c := setup(t)
	ctx := context.Background()
	adapter, err := wechatpay.New(map[string][]byte{wechatpayfake.KeyID: fake.PublicKeyPEM()},
		[][]byte{[]byte("0123456789abcdefghijklmnopqrstuv")}, []string{mchID}, 0)
	require.NoError(t, err)

	_, err = c.Transaction(ctx, "NEW", "")
	var apiErr *wechatpayapi.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "ORDER_NOT_EXIST", apiErr.Code)

	fake.SetTransaction("WAIT", wechatpayfake.Transaction{State: "USERPAYING", Total: 100, TransactionID: "42000001"})
	raw, err := c.Transaction(ctx, "WAIT", "")
	require.NoError(t, err)
	q, err := adapter.Query(raw)
	require.NoError(t, err)
	assert.Equal(t, wechatpay.QueryPending, q.State)

	fake.SetTransaction("PAID", wechatpayfake.Transaction{State: "SUCCESS", Total: 2500, TransactionID: "42000002",
		SuccessTime: "2026-12-07T18:00:05+08:00"})
	raw, err = c.Transaction(ctx, "PAID", "")
	require.NoError(t, err)
	q, err = adapter.Query(raw)
	require.NoError(t, err)
	require.Equal(t, wechatpay.QueryPaid, q.State)
	assert.Equal(t, int64(2500), q.Event.Facts[0].Amount)
	assert.Equal(t, "42000002", q.Event.PaymentKey)
	assert.Contains(t, q.Event.References, "PAID")

	fake.SetTransaction("SHUT", wechatpayfake.Transaction{State: "CLOSED", Total: 100})
	raw, err = c.Transaction(ctx, "SHUT", "")
	require.NoError(t, err)
	q, err = adapter.Query(raw)
	require.NoError(t, err)
	assert.Equal(t, wechatpay.QueryClosed, q.State)

	fake.SetTransaction("FORGED", wechatpayfake.Transaction{State: "SUCCESS", Total: 1, TransactionID: "4", SuccessTime: "2026-12-07T18:00:05+08:00", BadSign: true})
	_, err = c.Transaction(ctx, "FORGED", "")
	require.ErrorIs(t, err, wechatpayapi.ErrSignature)

	fake.SetTransaction("BUSY", wechatpayfake.Transaction{HTTPStatus: http.StatusTooManyRequests, RetryAfter: "3"})
	_, err = c.Transaction(ctx, "BUSY", "")
	var rl *wechatpayapi.RateLimitedError
	require.ErrorAs(t, err, &rl)
	assert.Equal(t, 3*time.Second, rl.RetryAfter)

	fake.SetTransaction("DOWN", wechatpayfake.Transaction{HTTPStatus: http.StatusInternalServerError})
	_, err = c.Transaction(ctx, "DOWN", "")
	require.Error(t, err)
	assert.False(t, errors.As(err, &rl))

	fake.SetTransaction("SLOW", wechatpayfake.Transaction{State: "NOTPAY", Total: 1, Delay: time.Minute})
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = c.Transaction(short, "SLOW", "")
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
