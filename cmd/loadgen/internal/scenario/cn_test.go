package scenario

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/alipay"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay"
	"github.com/onceledger/onceledger/cmd/loadgen/internal/model"
	"github.com/onceledger/onceledger/cmd/loadgen/internal/sign"
	"github.com/onceledger/onceledger/domain/delivery"
)

// The Alipay and WeChat Pay bodies verify with the server's own adapters,
// and tell the model's facts: captures of the trade, refunds summing to the
// model's (Alipay's cumulative totals by their highest, WeChat's one per
// refund id), in CNY, no fee, no payouts.
func TestCNDeliveriesVerifyAndTellTheFacts(t *testing.T) {
	ak, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	wk, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	pub := func(k *rsa.PrivateKey) []byte {
		der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
		require.NoError(t, err)
		return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	}
	const appID, mchID, serial, apiKey = "2021000000000001", "1900000109", "PUB_KEY_ID_1", "0123456789abcdefghijklmnopqrstuv"
	ali, err := alipay.New([][]byte{pub(ak)}, []string{appID})
	require.NoError(t, err)
	wx, err := wechatpay.New(map[string][]byte{serial: pub(wk)}, [][]byte{[]byte(apiKey)}, []string{mchID}, 0)
	require.NoError(t, err)
	ws, err := sign.NewWechatpay(wk, serial, apiKey)
	require.NoError(t, err)
	g := gen(t, Config{Seed: 5, Providers: []string{Alipay, Wechatpay}, Reorder: 0.5, Conflicts: 0.2, PayoutEvery: 2,
		CN: CN{Alipay: sign.NewAlipay(ak), AlipayAppID: appID, Wechatpay: ws, MchID: mchID}})
	kinds := map[string]int{}
	for _, lc := range lifecycles(g, 300) {
		require.False(t, lc.Payout, "a payout notification for %s", lc.Provider)
		var want, got [2]int64 // captured, refunded
		for _, f := range lc.Facts {
			require.True(t, f.Currency == "CNY" && f.Fee == 0, "%+v", f)
			want[min(int(f.Kind)-int(model.Capture), 1)] += f.Amount
		}
		var highest int64
		for _, d := range lc.Deliveries {
			kinds[lc.Provider+" "+d.Type]++
			h := http.Header{}
			if lc.Provider == Wechatpay {
				require.NoError(t, ws.Headers(h, time.Now(), d.Body))
			}
			var evs []delivery.Event
			if lc.Provider == Alipay {
				evs, err = ali.Parse(providers.Request{Header: h, Body: d.Body})
			} else {
				evs, err = wx.Parse(providers.Request{Header: h, Body: d.Body, Now: time.Now()})
			}
			require.NoError(t, err, "%s %s", lc.Provider, d.Type)
			require.Len(t, evs, 1)
			assert.Equal(t, d.ID, evs[0].DedupKey)
			for _, f := range evs[0].Facts {
				switch f.Kind {
				case delivery.KindCaptured:
					got[0] = f.Amount // TRADE_FINISHED repeats the capture
				case delivery.KindRefundCumulative:
					highest = max(highest, f.Amount)
				case delivery.KindRefunded:
					got[1] += f.Amount
				}
			}
		}
		got[1] += highest
		assert.Equal(t, want, got, "%s %s: captured, refunded", lc.Provider, lc.Key)
	}
	for _, k := range []string{"alipay TRADE_SUCCESS", "alipay TRADE_CLOSED", "alipay TRADE_FINISHED",
		"wechatpay TRANSACTION.SUCCESS", "wechatpay REFUND.SUCCESS", "wechatpay REFUND.ABNORMAL"} {
		assert.NotZero(t, kinds[k], "no %s generated", k)
	}
	_, err = New(Config{Providers: []string{Alipay}, RunID: "x"})
	assert.ErrorIs(t, err, ErrConfig, "alipay without a signer")
	_, err = New(Config{Providers: []string{Wechatpay}, RunID: "x", CN: CN{Wechatpay: ws}})
	assert.ErrorIs(t, err, ErrConfig, "wechatpay without an mchid")
}
