package sign

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
	"github.com/onceledger/onceledger/domain/delivery"
)

// No published SDK signs for Go: the signers are checked against the
// server's verifiers, which are themselves checked against the providers'
// published vectors (adapters/providers/alipay, wechatpay).
func publicPEM(t *testing.T, k *rsa.PrivateKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func TestAlipaySignatureVerifies(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	a, err := alipay.New([][]byte{publicPEM(t, key)}, []string{"2021000000000001"})
	require.NoError(t, err)
	body, err := NewAlipay(key).Body(map[string]string{
		"notify_time": "2026-11-29 10:00:06", "notify_type": "trade_status_sync", "notify_id": "n1", "app_id": "2021000000000001",
		"charset": "utf-8", "trade_no": "2026112922001", "trade_status": "TRADE_SUCCESS", "total_amount": "88.00",
		"subject": "a b+c 会员",
	})
	require.NoError(t, err)
	evs, err := a.Parse(providers.Request{Body: body})
	require.NoError(t, err)
	assert.Equal(t, []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: "2026112922001", Amount: 8800, Currency: "CNY"}}, evs[0].Facts)
	body[len(body)-5] ^= 1
	_, err = a.Parse(providers.Request{Body: body})
	assert.Error(t, err, "tampered")
}

func TestWechatpaySignatureAndResourceVerify(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	const serial, apiKey = "PUB_KEY_ID_1", "0123456789abcdefghijklmnopqrstuv"
	a, err := wechatpay.New(map[string][]byte{serial: publicPEM(t, key)}, [][]byte{[]byte(apiKey)}, []string{"1900000109"}, 0)
	require.NoError(t, err)
	w, err := NewWechatpay(key, serial, apiKey)
	require.NoError(t, err)
	now := time.Now()
	body, err := w.Body("EV-1", "TRANSACTION.SUCCESS", now, map[string]any{"mchid": "1900000109", "transaction_id": "4200001",
		"trade_state": "SUCCESS", "amount": map[string]any{"total": 100, "currency": "CNY"}})
	require.NoError(t, err)
	h := http.Header{}
	require.NoError(t, w.Headers(h, now, body))
	evs, err := a.Parse(providers.Request{Header: h, Body: body, Now: now})
	require.NoError(t, err)
	assert.Equal(t, []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: "4200001", Amount: 100, Currency: "CNY"}}, evs[0].Facts)
	_, err = NewWechatpay(key, serial, "short")
	assert.ErrorIs(t, err, ErrBadSecret)
}
