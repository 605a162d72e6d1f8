package alipayapi_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/alipay/alipayapi"
	"github.com/onceledger/onceledger/adapters/providers/alipay/alipayapi/alipayfake"
)

// setup: an app key, the double knowing its public half, a client of it.
func setup(t *testing.T) (*alipayfake.Fake, *alipayapi.Client, *rsa.PrivateKey) {
	t.Helper()
	appKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	fake, err := alipayfake.New("2021000000000001", &appKey.PublicKey)
	require.NoError(t, err)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	der, err := x509.MarshalPKCS8PrivateKey(appKey)
	require.NoError(t, err)
	c, err := alipayapi.New(srv.URL+"/gateway.do", "2021000000000001",
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), [][]byte{fake.PublicKeyPEM()}, nil)
	require.NoError(t, err)
	return fake, c, appKey
}

func TestDownloadVerifiesAndDownloads(t *testing.T) {
	fake, c, _ := setup(t)
	zipBytes, err := os.ReadFile(filepath.Join("..", "testdata", "bill", "trade.csv.zip"))
	require.NoError(t, err)
	fake.AddBill(alipayapi.BillTrade, "2026-11-30", zipBytes)
	var buf bytes.Buffer
	require.NoError(t, c.Download(context.Background(), alipayapi.BillTrade, "2026-11-30", &buf))
	assert.Equal(t, zipBytes, buf.Bytes())
	assert.Equal(t, 1, fake.Requests, "the signed request passed the double's check")
}

func TestNoBillIsErrNoBill(t *testing.T) {
	_, c, _ := setup(t)
	_, err := c.DownloadURL(context.Background(), alipayapi.BillTrade, "2026-11-29")
	require.ErrorIs(t, err, alipayapi.ErrNoBill)
}

func TestAnswerSignedByAnotherKeyIsRefused(t *testing.T) {
	fake, c, _ := setup(t)
	fake.AddBill(alipayapi.BillTrade, "2026-11-30", []byte("PK\x03\x04"))
	require.NoError(t, fake.SignWithWrongKey(true))
	_, err := c.DownloadURL(context.Background(), alipayapi.BillTrade, "2026-11-30")
	require.ErrorIs(t, err, alipayapi.ErrSignature)
}

// A request signed with another app key is refused by the double (its
// signature check is real), and the client reports Alipay's error.
func TestRequestSignedWithAnotherKeyIsRefusedByTheDouble(t *testing.T) {
	fake, _, _ := setup(t)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	c, err := alipayapi.New(srv.URL+"/gateway.do", "2021000000000001",
		pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(other)}), [][]byte{fake.PublicKeyPEM()}, nil)
	require.NoError(t, err)
	fake.AddBill(alipayapi.BillTrade, "2026-11-30", []byte("PK\x03\x04"))
	_, err = c.DownloadURL(context.Background(), alipayapi.BillTrade, "2026-11-30")
	var ae *alipayapi.APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "isv.invalid-signature", ae.SubCode)
	assert.Equal(t, 0, fake.Requests)
}

func TestBillsDownloadsBothOrNothing(t *testing.T) {
	fake, c, _ := setup(t)
	c.Now = func() time.Time { return time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC) }
	fake.AddBill(alipayapi.BillTrade, "2026-11-30", []byte("PK\x03\x04trade"))
	_, err := c.Bills(context.Background(), "2026-11-30", t.TempDir())
	require.ErrorIs(t, err, alipayapi.ErrNoBill, "the account bill is missing: no bill is returned to import")
	fake.AddBill(alipayapi.BillSignCustomer, "2026-11-30", []byte("PK\x03\x04account"))
	bills, err := c.Bills(context.Background(), "2026-11-30", t.TempDir())
	require.NoError(t, err)
	require.Len(t, bills, 2)
	b, err := os.ReadFile(bills[1].Path)
	require.NoError(t, err)
	assert.Equal(t, "PK\x03\x04account", string(b))
	_, err = c.Bills(context.Background(), "30/11/2026", t.TempDir())
	require.Error(t, err)
}

// The key tool's bare base64 (no PEM armour) is read too.
func TestParsePrivateKeyForms(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	der := x509.MarshalPKCS1PrivateKey(k)
	for _, in := range [][]byte{
		pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: der}),
		[]byte(base64.StdEncoding.EncodeToString(der) + "\n"),
	} {
		got, err := alipayapi.ParsePrivateKey(in)
		require.NoError(t, err)
		assert.True(t, got.Equal(k))
	}
	_, err = alipayapi.ParsePrivateKey([]byte("not a key"))
	require.Error(t, err)
}

func TestDownloadThatIsNotAZipIsRefused(t *testing.T) {
	fake, c, _ := setup(t)
	fake.AddBill(alipayapi.BillTrade, "2026-11-30", []byte("<html>expired</html>"))
	err := c.Download(context.Background(), alipayapi.BillTrade, "2026-11-30", &bytes.Buffer{})
	require.ErrorContains(t, err, "not a zip")
}

// The app id defaults to the one accepted app id; with several, or a
// missing key file, the error names the variable to set.
func TestConfigClient(t *testing.T) {
	fake, _, appKey := setup(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "app.pem")
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(appKey)}), 0o600))
	pubFile := filepath.Join(dir, "alipay.pem")
	require.NoError(t, os.WriteFile(pubFile, fake.PublicKeyPEM(), 0o600))
	cfg := alipayapi.Config{AppPrivateKey: keyFile}
	_, err := cfg.Client([]string{pubFile}, []string{"2021000000000001"})
	require.NoError(t, err)
	_, err = cfg.Client([]string{pubFile}, []string{"2021000000000001", "2021000000000002"})
	require.ErrorContains(t, err, alipayapi.EnvAppID)
	_, err = alipayapi.Config{AppID: "2021000000000001"}.Client([]string{pubFile}, nil)
	require.ErrorContains(t, err, alipayapi.EnvAppPrivateKey)
	_, err = cfg.Client(nil, []string{"2021000000000001"})
	require.ErrorContains(t, err, "ONCELEDGER_ALIPAY_PUBLIC_KEYS")
}
