package wechatpayapi_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay/wechatpayapi"
)

// A gzip download is bounded like an upload (issue 33): 8 MiB of one
// line, compressing about 1,000 times, is refused past its first MiB.
func TestGzipDownloadBombRefused(t *testing.T) {
	fake, c := setup(t)
	fake.AddBill(wechatpayapi.TradeBill, "2026-11-30", bytes.Repeat([]byte{'a'}, 8<<20))
	c.Gzip = true
	tk, err := c.BillTicket(context.Background(), wechatpayapi.TradeBill, "2026-11-30")
	require.NoError(t, err)
	var buf bytes.Buffer
	err = c.Download(context.Background(), tk, &buf)
	require.ErrorIs(t, err, report.ErrArchiveLimit)
	assert.ErrorContains(t, err, "over the limit of")
	assert.Less(t, buf.Len(), 2<<20, "bytes written before the refusal")
}
