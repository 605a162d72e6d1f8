package chaos

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/providers/alipay/alipayapi/alipayfake"
)

// TestKill9DuringQuery: serve asks Alipay (the double) about an expected
// payment and is killed -9 while the question is in flight (the double
// holds its answer). Nothing was recorded; the schedule survives in
// expected_payments (next_query_at, the lease running out); the restarted
// serve asks again once the lease has run out, records the capture through
// the gate, and the expectation ends paid, the capture recorded once.
func TestKill9DuringQuery(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const appID = "2021000000000001"
	appKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	fake, err := alipayfake.New(appID, &appKey.PublicKey)
	require.NoError(t, err)
	gw := httptest.NewServer(fake)
	defer gw.Close()
	dir := t.TempDir()
	pub, priv := filepath.Join(dir, "alipay.pem"), filepath.Join(dir, "app.pem")
	require.NoError(t, os.WriteFile(pub, fake.PublicKeyPEM(), 0o600))
	der, err := x509.MarshalPKCS8PrivateKey(appKey)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(priv, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))

	const trade = "2026120722001409999"
	// The question in flight is held until the kill.
	fake.SetTrade("ORDER-K9", alipayfake.Trade{TradeNo: trade, Status: "TRADE_SUCCESS", TotalAmount: "42.00",
		SendPayDate: "2026-12-07 10:00:05", Delay: 10 * time.Minute})

	writer := "chaos-writer-" + randomHex(t, 8)
	dbURL := pgtest.UnusedDatabaseURL(t)
	srv := newServer(t, dbURL, newSecrets(t), false)
	srv.env = []string{
		"ONCELEDGER_ALIPAY_PUBLIC_KEYS=" + pub, "ONCELEDGER_ALIPAY_APP_IDS=" + appID,
		"ONCELEDGER_ALIPAY_APP_PRIVATE_KEY=" + priv, "ONCELEDGER_ALIPAY_GATEWAY=" + gw.URL + "/gateway.do",
		"ONCELEDGER_WRITER_TOKENS=shop=" + writer, "ONCELEDGER_QUERY_AFTER=1ms",
		"ONCELEDGER_TEST_QUERY_LEASE_SECONDS=4",
	}
	srv.start()
	body := []byte(`{"provider":"alipay","reference":"ORDER-K9","amount":4200,"currency":"CNY","expires_at":"` +
		time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `"}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.url("/v1/expected-payments"), bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+writer)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	require.NoError(t, eventually(ctx, time.Minute, 50*time.Millisecond, func() error {
		if fake.Queries("ORDER-K9") == 0 {
			return fmt.Errorf("not asked yet")
		}
		return nil
	}), "serve asks Alipay")
	srv.kill9()
	t.Log("kill -9 of serve with the question in flight")

	pool := openPool(t, dbURL)
	var next *time.Time
	var leased *string
	require.NoError(t, pool.QueryRow(ctx, `SELECT next_query_at, lease_owner FROM expected_payments WHERE reference = 'ORDER-K9'`).
		Scan(&next, &leased))
	require.NotNil(t, next, "the schedule survives the kill")
	require.NotNil(t, leased, "the lease of the killed asker, which runs out")
	captured := func() int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE stream_id = $1 AND type = 'payment.captured'`,
			"payment-alipay-"+trade).Scan(&n))
		return n
	}
	require.Zero(t, captured(), "nothing recorded from a question that got no answer")

	fake.SetTrade("ORDER-K9", alipayfake.Trade{TradeNo: trade, Status: "TRADE_SUCCESS", TotalAmount: "42.00",
		SendPayDate: "2026-12-07 10:00:05"})
	srv.start()
	require.NoError(t, eventually(ctx, 2*time.Minute, 100*time.Millisecond, func() error {
		var status string
		if err := pool.QueryRow(ctx, `SELECT status FROM expected_payments WHERE reference = 'ORDER-K9'`).Scan(&status); err != nil {
			return err
		}
		if status != "paid" {
			return fmt.Errorf("status %s (asked %d times)", status, fake.Queries("ORDER-K9"))
		}
		return nil
	}))
	require.Equal(t, 1, captured(), "the capture recorded once")
	var paid int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE stream_id LIKE 'expectation-%' AND type = 'expectation.paid'`).Scan(&paid))
	require.Equal(t, 1, paid)
}
