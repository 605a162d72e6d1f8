package wechatpayapi_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/wechatpay/wechatpayapi"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay/wechatpayapi/wechatpayfake"
)

const (
	mchID  = "1230000109"
	serial = "5157F09EFDC096DE15EBE81A47057A7232F1B8E1"
)

func setup(t *testing.T) (*wechatpayfake.Fake, *wechatpayapi.Client) {
	t.Helper()
	mk, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	fake, err := wechatpayfake.New(mchID, serial, &mk.PublicKey)
	require.NoError(t, err)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	der, err := x509.MarshalPKCS8PrivateKey(mk)
	require.NoError(t, err)
	c, err := wechatpayapi.New(srv.URL, mchID, serial, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}),
		map[string][]byte{wechatpayfake.KeyID: fake.PublicKeyPEM()}, nil)
	require.NoError(t, err)
	return fake, c
}

func bill(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "bill", name))
	require.NoError(t, err)
	return b
}

// Plain and gzip downloads both arrive as the bill itself, checked
// against hash_value.
func TestDownloadPlainAndGzip(t *testing.T) {
	fake, c := setup(t)
	trade := bill(t, "tradebill.csv")
	fake.AddBill(wechatpayapi.TradeBill, "2026-11-30", trade)
	for _, gz := range []bool{false, true} {
		c.Gzip = gz
		tk, err := c.BillTicket(context.Background(), wechatpayapi.TradeBill, "2026-11-30")
		require.NoError(t, err)
		var buf bytes.Buffer
		require.NoError(t, c.Download(context.Background(), tk, &buf), "gzip %v", gz)
		assert.Equal(t, trade, buf.Bytes())
	}
}

func TestCorruptedDownloadIsRefused(t *testing.T) {
	fake, c := setup(t)
	fake.AddBill(wechatpayapi.TradeBill, "2026-11-30", bill(t, "tradebill.csv"))
	fake.AddBill(wechatpayapi.FundFlowBill, "2026-11-30", bill(t, "fundflowbill.csv"))
	fake.Corrupt(true)
	for _, gz := range []bool{false, true} {
		c.Gzip = gz
		dir := t.TempDir()
		_, err := c.Bills(context.Background(), "2026-11-30", dir)
		require.ErrorIs(t, err, wechatpayapi.ErrHash)
		assert.ErrorContains(t, err, "tradebill 2026-11-30")
		left, _ := os.ReadDir(dir)
		assert.Empty(t, left, "the refused download is removed")
	}
}

func TestAnswerSignedByAnotherKeyIsRefused(t *testing.T) {
	fake, c := setup(t)
	fake.AddBill(wechatpayapi.TradeBill, "2026-11-30", bill(t, "tradebill.csv"))
	require.NoError(t, fake.SignWithWrongKey(true))
	_, err := c.BillTicket(context.Background(), wechatpayapi.TradeBill, "2026-11-30")
	require.ErrorIs(t, err, wechatpayapi.ErrSignature)
}

// An answer older than five minutes (a replay, or a clock far off) is
// refused like a stale notification.
func TestStaleAnswerIsRefused(t *testing.T) {
	fake, c := setup(t)
	fake.AddBill(wechatpayapi.TradeBill, "2026-11-30", bill(t, "tradebill.csv"))
	fake.AnswerSkew = -4 * time.Minute
	_, err := c.BillTicket(context.Background(), wechatpayapi.TradeBill, "2026-11-30")
	require.NoError(t, err, "within five minutes")
	fake.AnswerSkew = -6 * time.Minute
	_, err = c.BillTicket(context.Background(), wechatpayapi.TradeBill, "2026-11-30")
	require.ErrorIs(t, err, wechatpayapi.ErrSignature)
}

func TestNoBillAndUnsignedRequest(t *testing.T) {
	fake, c := setup(t)
	_, err := c.BillTicket(context.Background(), wechatpayapi.FundFlowBill, "2026-11-29")
	require.ErrorIs(t, err, wechatpayapi.ErrNoBill)

	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	bad, err := wechatpayapi.New(srv.URL, mchID, serial,
		pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(other)}),
		map[string][]byte{wechatpayfake.KeyID: fake.PublicKeyPEM()}, nil)
	require.NoError(t, err)
	fake.AddBill(wechatpayapi.TradeBill, "2026-11-30", bill(t, "tradebill.csv"))
	before := fake.Requests
	_, err = bad.BillTicket(context.Background(), wechatpayapi.TradeBill, "2026-11-30")
	var ae *wechatpayapi.APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "SIGN_ERROR", ae.Code, "the double checks the merchant's signature")
	assert.Equal(t, before, fake.Requests)
}

// The merchant id defaults to the one accepted merchant id; what is
// missing is named by its variable.
func TestConfigClient(t *testing.T) {
	mk, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	fake, err := wechatpayfake.New(mchID, serial, &mk.PublicKey)
	require.NoError(t, err)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "apiclient_key.pem")
	der, err := x509.MarshalPKCS8PrivateKey(mk)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	pubFile := filepath.Join(dir, "pub.pem")
	require.NoError(t, os.WriteFile(pubFile, fake.PublicKeyPEM(), 0o600))
	keys := []string{wechatpayfake.KeyID + "=" + pubFile}
	cfg := wechatpayapi.Config{MerchantPrivateKey: keyFile, MerchantSerial: serial}
	_, err = cfg.Client(keys, []string{mchID})
	require.NoError(t, err)
	_, err = cfg.Client(keys, []string{mchID, "1230000110"})
	require.ErrorContains(t, err, wechatpayapi.EnvMchID)
	_, err = wechatpayapi.Config{MchID: mchID, MerchantPrivateKey: keyFile}.Client(keys, nil)
	require.ErrorContains(t, err, wechatpayapi.EnvMerchantSerial)
	_, err = cfg.Client(nil, []string{mchID})
	require.ErrorContains(t, err, "ONCELEDGER_WECHATPAY_KEYS")
}
