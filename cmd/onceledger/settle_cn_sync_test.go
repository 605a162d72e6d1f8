package main

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
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/providers/alipay/alipayapi"
	"github.com/onceledger/onceledger/adapters/providers/alipay/alipayapi/alipayfake"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay/wechatpayapi"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay/wechatpayapi/wechatpayfake"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
)

const syncDate = "2026-11-30"

var (
	alipayBills = filepath.Join("..", "..", "adapters", "providers", "alipay", "testdata", "bill")
	wechatBills = filepath.Join("..", "..", "adapters", "providers", "wechatpay", "testdata", "bill")
)

// writePEM writes a PEM file into dir and returns its path.
func writePEM(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, b, 0o600))
	return p
}

func privatePEM(t *testing.T, k *rsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// eventCounts are the recorded events by type, and the inbox rows.
func eventCounts(t *testing.T, url string) (map[string]int64, int64) {
	t.Helper()
	a, err := app.New(context.Background(), app.Config{DatabaseURL: url})
	require.NoError(t, err)
	defer a.Close()
	rows, err := a.Pool().Query(context.Background(), `SELECT type, count(*) FROM events GROUP BY type`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var typ string
		var n int64
		require.NoError(t, rows.Scan(&typ, &n))
		out[typ] = n
	}
	require.NoError(t, rows.Err())
	return out, countInbox(t, url)
}

// lineCounts strips a summary's file names: what each file read and did.
func lineCounts(s string) []string {
	return regexp.MustCompile(`\d+ lines read, .*`).FindAllString(s, -1)
}

// alipaySync is `settle sync alipay` configured against a double serving
// the sample trade bill (.csv.zip) and the sample account bill (zipped as
// Alipay zips it).
func alipaySync(t *testing.T) (*alipayfake.Fake, *settleSyncAlipayCmd) {
	t.Helper()
	appKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	fake, err := alipayfake.New("2021000000000001", &appKey.PublicKey)
	require.NoError(t, err)
	trade, err := os.ReadFile(filepath.Join(alipayBills, "trade.csv.zip"))
	require.NoError(t, err)
	account, err := os.ReadFile(filepath.Join(alipayBills, "account.csv"))
	require.NoError(t, err)
	accountZip, err := alipayfake.Zip(map[string][]byte{"20885318916687390156_20261130_账务明细.csv": account})
	require.NoError(t, err)
	fake.AddBill(alipayapi.BillTrade, syncDate, trade)
	fake.AddBill(alipayapi.BillSignCustomer, syncDate, accountZip)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	return fake, &settleSyncAlipayCmd{
		Config:     alipayapi.Config{AppPrivateKey: writePEM(t, dir, "app.pem", privatePEM(t, appKey)), Gateway: srv.URL + "/gateway.do"},
		PublicKeys: []string{writePEM(t, dir, "alipay.pem", fake.PublicKeyPEM())}, AppIDs: []string{"2021000000000001"}, Date: syncDate,
	}
}

// `settle sync alipay` imports the day's two bills as `settle import`
// imports the same files: the same lines, the same facts; a second sync
// finds only duplicates.
func TestSettleSyncAlipay(t *testing.T) {
	g := settleGlobals(pgtest.NewDatabase(t))
	_, cmd := alipaySync(t)
	var out bytes.Buffer
	require.NoError(t, cmd.run(g, 168*time.Hour, &out, nil))
	assert.Contains(t, out.String(), "alipay trade bill "+syncDate+": ")
	assert.Contains(t, out.String(), "alipay signcustomer bill "+syncDate+": ")

	ref := settleGlobals(pgtest.NewDatabase(t))
	imported, err := runImport(t, ref, "alipay", filepath.Join(alipayBills, "trade.csv.zip"), filepath.Join(alipayBills, "account.csv"))
	require.NoError(t, err)
	assert.Equal(t, lineCounts(imported)[:2], lineCounts(out.String()))
	synced, inbox := eventCounts(t, g.cli.DatabaseURL)
	want, wantInbox := eventCounts(t, ref.cli.DatabaseURL)
	assert.Equal(t, want, synced)
	assert.Equal(t, wantInbox, inbox)
	assert.Positive(t, synced["payment.captured"], "the trade bill's captures are recorded")

	out.Reset()
	require.NoError(t, cmd.run(g, 168*time.Hour, &out, nil))
	assert.Regexp(t, `trade bill `+syncDate+`: (\d+) lines read, 0 new \(0 facts recorded\), \d+ duplicates, 0 conflicts`, out.String())
	assert.Regexp(t, `signcustomer bill `+syncDate+`: (\d+) lines read, 0 new \(0 facts recorded\), \d+ duplicates, 0 conflicts`, out.String())
	again, _ := eventCounts(t, g.cli.DatabaseURL)
	assert.Equal(t, synced, again)
}

// An answer whose signature does not verify with Alipay's configured key
// is refused, and nothing is imported; so is a day without a bill.
func TestSettleSyncAlipayRefusals(t *testing.T) {
	g := settleGlobals(pgtest.NewDatabase(t))
	fake, cmd := alipaySync(t)
	require.NoError(t, fake.SignWithWrongKey(true))
	err := cmd.run(g, 168*time.Hour, &bytes.Buffer{}, nil)
	require.ErrorIs(t, err, alipayapi.ErrSignature)
	assert.ErrorContains(t, err, "nothing imported")
	assert.Zero(t, countInbox(t, g.cli.DatabaseURL))

	require.NoError(t, fake.SignWithWrongKey(false))
	cmd.Date = "2026-11-29"
	err = cmd.run(g, 168*time.Hour, &bytes.Buffer{}, nil)
	require.ErrorIs(t, err, alipayapi.ErrNoBill)
	assert.Zero(t, countInbox(t, g.cli.DatabaseURL))
}

// wechatSync is `settle sync wechatpay` configured against a double
// serving the sample trade and fund-flow bills.
func wechatSync(t *testing.T) (*wechatpayfake.Fake, *settleSyncWechatpayCmd) {
	t.Helper()
	mk, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	const mchID, serial = "1230000109", "5157F09EFDC096DE15EBE81A47057A7232F1B8E1"
	fake, err := wechatpayfake.New(mchID, serial, &mk.PublicKey)
	require.NoError(t, err)
	for kind, name := range map[string]string{wechatpayapi.TradeBill: "tradebill.csv", wechatpayapi.FundFlowBill: "fundflowbill.csv"} {
		b, err := os.ReadFile(filepath.Join(wechatBills, name))
		require.NoError(t, err)
		fake.AddBill(kind, syncDate, b)
	}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	return fake, &settleSyncWechatpayCmd{
		Config: wechatpayapi.Config{MerchantPrivateKey: writePEM(t, dir, "apiclient_key.pem", privatePEM(t, mk)),
			MerchantSerial: serial, APIBase: srv.URL},
		Keys:   []string{wechatpayfake.KeyID + "=" + writePEM(t, dir, "wechatpay.pem", fake.PublicKeyPEM())},
		MchIDs: []string{mchID}, Date: syncDate,
	}
}

// `settle sync wechatpay` imports the day's two bills (downloaded gzipped)
// as `settle import` imports the same files; a second sync finds only
// duplicates.
func TestSettleSyncWechatpay(t *testing.T) {
	g := settleGlobals(pgtest.NewDatabase(t))
	_, cmd := wechatSync(t)
	var out bytes.Buffer
	require.NoError(t, cmd.run(g, 168*time.Hour, &out, nil))

	ref := settleGlobals(pgtest.NewDatabase(t))
	imported, err := runImport(t, ref, "wechatpay", filepath.Join(wechatBills, "tradebill.csv"), filepath.Join(wechatBills, "fundflowbill.csv"))
	require.NoError(t, err)
	assert.Equal(t, lineCounts(imported)[:2], lineCounts(out.String()))
	synced, inbox := eventCounts(t, g.cli.DatabaseURL)
	want, wantInbox := eventCounts(t, ref.cli.DatabaseURL)
	assert.Equal(t, want, synced)
	assert.Equal(t, wantInbox, inbox)
	assert.Positive(t, synced["payment.captured"], "the trade bill's captures are recorded")

	out.Reset()
	require.NoError(t, cmd.run(g, 168*time.Hour, &out, nil))
	assert.Regexp(t, `tradebill `+syncDate+`: (\d+) lines read, 0 new \(0 facts recorded\), \d+ duplicates, 0 conflicts`, out.String())
	assert.Regexp(t, `fundflowbill `+syncDate+`: (\d+) lines read, 0 new \(0 facts recorded\), \d+ duplicates, 0 conflicts`, out.String())
	again, _ := eventCounts(t, g.cli.DatabaseURL)
	assert.Equal(t, synced, again)
}

// A download whose SHA1 is not the hash_value is refused naming the
// problem, and nothing is imported (not even the other bill); an answer
// signed with another key is refused too.
func TestSettleSyncWechatpayRefusals(t *testing.T) {
	g := settleGlobals(pgtest.NewDatabase(t))
	fake, cmd := wechatSync(t)
	fake.Corrupt(true)
	err := cmd.run(g, 168*time.Hour, &bytes.Buffer{}, nil)
	require.ErrorIs(t, err, wechatpayapi.ErrHash)
	assert.ErrorContains(t, err, "hash_value")
	assert.ErrorContains(t, err, "nothing imported")
	assert.Zero(t, countInbox(t, g.cli.DatabaseURL))

	fake.Corrupt(false)
	require.NoError(t, fake.SignWithWrongKey(true))
	err = cmd.run(g, 168*time.Hour, &bytes.Buffer{}, nil)
	require.ErrorIs(t, err, wechatpayapi.ErrSignature)
	assert.Zero(t, countInbox(t, g.cli.DatabaseURL))
}
