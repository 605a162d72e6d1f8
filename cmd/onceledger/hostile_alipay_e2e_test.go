package main_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/payment"
)

// foldAlipayParam reshapes a signed Alipay body without the key: folded's
// parameter is removed and appended to into's value as "%26folded%3D…".
// The decoded pairs joined by '&' are the bytes Alipay signed, unchanged.
func foldAlipayParam(t *testing.T, body []byte, into, folded string) []byte {
	t.Helper()
	segs := strings.Split(string(body), "&")
	var raw string
	out := segs[:0]
	for _, s := range segs {
		if v, ok := strings.CutPrefix(s, folded+"="); ok {
			raw = v
			continue
		}
		out = append(out, s)
	}
	require.NotEmpty(t, raw)
	for i, s := range out {
		if strings.HasPrefix(s, into+"=") {
			out[i] = s + "%26" + folded + "%3D" + raw
			return []byte(strings.Join(out, "&"))
		}
	}
	t.Fatalf("no %s", into)
	return nil
}

// Issue 33, finding 2: a reshaped copy of a genuine notification, sent
// first, is refused (401, nothing recorded); the genuine delivery after it
// is booked normally. Folding the next parameter into notify_type makes a
// notification that is not trade_status_sync: before the fix, recorded as
// ignored under the genuine notify_id, after which the genuine delivery
// only conflicted with it and the money was never booked.
func TestAlipayReshapedCopyRefusedGenuineBooked(t *testing.T) {
	eachCNStore(t, func(t *testing.T, s *cnStack) {
		trade := uniqCN("2026H")
		stream := "payment-alipay-" + trade
		paid := alipayBody(t, s.alipayKey, alipayNotification("n-h-pay", trade, "TRADE_SUCCESS", nil))
		reshaped := foldAlipayParam(t, paid, "notify_type", "out_trade_no")
		a := s.alipay(reshaped)
		assert.Equal(t, http.StatusUnauthorized, a.Status, a.Body)
		assert.NotEqual(t, "success", a.Body)
		assert.Empty(t, s.streamTypes(stream), "nothing recorded for the reshaped capture")
		wantSuccess(t, s.alipay(paid), "the genuine capture")
		assert.Equal(t, []string{payment.TypeCaptured}, s.streamTypes(stream))

		refund := alipayBody(t, s.alipayKey, alipayNotification("n-h-r1", trade, "TRADE_SUCCESS",
			map[string]string{"refund_fee": "10.00", "out_biz_no": "biz-1", "gmt_refund": "2026-11-30 09:00:00"}))
		a = s.alipay(foldAlipayParam(t, refund, "notify_type", "out_biz_no"))
		assert.Equal(t, http.StatusUnauthorized, a.Status, a.Body)
		assert.Equal(t, []string{payment.TypeCaptured}, s.streamTypes(stream), "nothing recorded for the reshaped refund")
		wantSuccess(t, s.alipay(refund), "the genuine refund")
		assert.Equal(t, []string{payment.TypeCaptured, payment.TypeRefundPosted}, s.streamTypes(stream))
	})
}
