package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/providers/alipay/alipayapi/alipayfake"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
	"github.com/onceledger/onceledger/domain/expectation"
)

// `onceledger query --provider alipay --payment REF` asks now, with serve's
// credentials from the environment, and records the paid answer through
// the gate; --payment without --provider is refused.
func TestQueryCommandAsksNow(t *testing.T) {
	clearProviderEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
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
	db := pgtest.NewDatabase(t)
	for k, v := range map[string]string{"ONCELEDGER_DATABASE_URL": db, "ONCELEDGER_ALIPAY_PUBLIC_KEYS": pub,
		"ONCELEDGER_ALIPAY_APP_IDS": appID, "ONCELEDGER_ALIPAY_APP_PRIVATE_KEY": priv,
		"ONCELEDGER_ALIPAY_GATEWAY": gw.URL + "/gateway.do"} {
		t.Setenv(k, v)
	}
	fake.SetTrade("ORDER-Q1", alipayfake.Trade{TradeNo: "2026120722001400555", Status: "TRADE_SUCCESS", TotalAmount: "5.55",
		SendPayDate: "2026-12-07 10:00:05"})
	core, err := app.NewCore(ctx, app.Config{DatabaseURL: db, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer core.Close()
	_, _, err = core.Expectations().Register(ctx, expectation.RegisterCommand{Provider: "alipay", Reference: "ORDER-Q1",
		Amount: 555, Currency: "CNY", ExpiresAt: time.Now().Add(time.Hour), Actor: "shop"})
	require.NoError(t, err)

	run := func(args ...string) error {
		c, kctx, err := parse(args, os.Environ())
		require.NoError(t, err)
		return kctx.Run(&globals{ctx: ctx, log: slog.New(slog.DiscardHandler), cli: c})
	}
	require.ErrorContains(t, run("query", "--payment", "ORDER-Q1"), "--payment needs --provider")
	require.NoError(t, run("query", "--provider", "alipay", "--payment", "ORDER-Q1", "--json"))
	assert.Equal(t, 1, fake.Queries("ORDER-Q1"))
	var n int
	require.NoError(t, core.Pool().QueryRow(ctx, `SELECT count(*) FROM events WHERE stream_id = 'payment-alipay-2026120722001400555'
		AND type = 'payment.captured'`).Scan(&n))
	assert.Equal(t, 1, n, "the answer recorded through the gate")
	require.NoError(t, run("query", "--provider", "alipay", "--payment", "ORDER-Q1"), "asking again records nothing new")
	require.NoError(t, core.Pool().QueryRow(ctx, `SELECT count(*) FROM events WHERE type = 'payment.captured'`).Scan(&n))
	assert.Equal(t, 1, n)
	require.ErrorContains(t, run("query", "--provider", "adyen"), "not asked")

	// --overdue asks about every overdue expected payment, whatever its
	// schedule: one registered three hours ago that expired an hour later.
	earlier, err := app.NewCore(ctx, app.Config{DatabaseURL: db, Logger: slog.New(slog.DiscardHandler),
		Now: func() time.Time { return time.Now().Add(-3 * time.Hour) }})
	require.NoError(t, err)
	defer earlier.Close()
	_, _, err = earlier.Expectations().Register(ctx, expectation.RegisterCommand{Provider: "alipay", Reference: "ORDER-LATE",
		Amount: 100, Currency: "CNY", ExpiresAt: time.Now().Add(-2 * time.Hour), Actor: "shop"})
	require.NoError(t, err)
	m := core.ExpectationManager("overdue")
	for status := ""; status != "overdue"; {
		_, err := m.Step(ctx)
		require.NoError(t, err)
		err = core.Pool().QueryRow(ctx, `SELECT status FROM expected_payments WHERE reference = 'ORDER-LATE'`).Scan(&status)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			require.NoError(t, err)
		}
		require.NoError(t, ctx.Err(), "never overdue")
	}
	require.NoError(t, run("query", "--overdue"))
	assert.Equal(t, 1, fake.Queries("ORDER-LATE"), "asked (Alipay has no such trade: ask again later)")
}
