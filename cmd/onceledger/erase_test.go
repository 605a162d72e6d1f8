package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/standard"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
)

const eraseSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// erasable is serve's app (app.Serve on a real socket) with the standard
// provider, a read token and an admin token.
type erasable struct {
	t    *testing.T
	url  string
	db   string
	pool *pgxpool.Pool
}

func startErasable(t *testing.T, retention time.Duration) *erasable {
	t.Helper()
	sw, err := standard.New([]string{eraseSecret}, 5*time.Minute)
	require.NoError(t, err)
	db := pgtest.NewDatabase(t)
	ctx, stop := context.WithCancel(context.Background())
	a, err := app.New(ctx, app.Config{
		DatabaseURL: db, Providers: map[string]providers.Adapter{standard.Name: sw},
		APITokens: []string{"reader=tok-read-0123456789"}, AdminTokens: []string{"alice=tok-admin-0123456789"},
		RawRetention: retention, RetentionInterval: 10 * time.Millisecond,
		ShutdownTimeout: time.Second, Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- a.Serve(ctx, l) }()
	t.Cleanup(func() {
		stop()
		<-served
	})
	return &erasable{t: t, url: "http://" + l.Addr().String(), db: db, pool: a.Pool()}
}

func (e *erasable) deliver(id, typ string, data map[string]any) {
	e.t.Helper()
	body, err := json.Marshal(map[string]any{"type": typ, "timestamp": time.Now().UTC().Format(time.RFC3339), "data": data})
	require.NoError(e.t, err)
	wh, err := standardwebhooks.NewWebhook(eraseSecret)
	require.NoError(e.t, err)
	now := time.Now()
	sig, err := wh.Sign(id, now, body)
	require.NoError(e.t, err)
	req, err := http.NewRequest(http.MethodPost, e.url+"/webhooks/standard", bytes.NewReader(body))
	require.NoError(e.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Webhook-Id", id)
	req.Header.Set("Webhook-Timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("Webhook-Signature", sig)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	require.Equal(e.t, http.StatusOK, resp.StatusCode, string(got))
}

// kept reports, per dedup key, whether its raw body is still stored; every
// row keeps its hash and normalized facts either way.
func (e *erasable) kept() map[string]bool {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), `
		SELECT dedup_key, raw_body IS NOT NULL, raw_erased_at IS NOT NULL, payload_hash <> '' AND normalized IS NOT NULL
		FROM webhook_inbox`)
	require.NoError(e.t, err)
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var key string
		var kept, erasedAt, facts bool
		require.NoError(e.t, rows.Scan(&key, &kept, &erasedAt, &facts))
		assert.NotEqual(e.t, kept, erasedAt, "%s: raw_erased_at is set exactly when the body is gone", key)
		assert.True(e.t, facts, "%s keeps its hash and facts", key)
		out[key] = kept
	}
	require.NoError(e.t, rows.Err())
	return out
}

func (e *erasable) erasures() []string {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(),
		`SELECT actor || ' ' || reason || ' ' || selector || ' ' || inbox_rows FROM raw_erasures ORDER BY id`)
	require.NoError(e.t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(e.t, rows.Scan(&s))
		out = append(out, s)
	}
	return out
}

func (e *erasable) post(path, token, body string) (int, string) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+path, strings.NewReader(body))
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(got)
}

func capture(pay, capID string, amount int) map[string]any {
	return map[string]any{"payment_id": pay, "capture_id": capID, "amount": amount, "currency": "USD"}
}

// TestEraseRawBodies: `onceledger erase` by payment and by delivery, and
// POST /v1/inbox/erase with an admin token (a read token gets 403), erase
// the selected raw bodies only, keep hashes, facts and events, and record
// each erasure with its actor. Rebuild and verify then still succeed: they
// never need a raw body.
func TestEraseRawBodies(t *testing.T) {
	e := startErasable(t, 0)
	e.deliver("msg_a1", "payment.captured", capture("pay_a", "cap_a", 1000))
	e.deliver("msg_a2", "refund.succeeded", map[string]any{"payment_id": "pay_a", "refund_id": "re_a", "amount": 300, "currency": "USD"})
	e.deliver("msg_b1", "payment.captured", capture("pay_b", "cap_b", 2000))
	e.deliver("msg_c1", "payment.captured", capture("pay_c", "cap_c", 500))
	require.Equal(t, map[string]bool{"msg_a1": true, "msg_a2": true, "msg_b1": true, "msg_c1": true}, e.kept())

	g := &globals{ctx: context.Background(), log: slog.New(slog.DiscardHandler), cli: &cli{DatabaseURL: e.db, EventStore: "postgres"}}
	require.NoError(t, (&eraseCmd{Payment: "standard/pay_a", Actor: "dpo"}).Run(g))
	assert.Equal(t, map[string]bool{"msg_a1": false, "msg_a2": false, "msg_b1": true, "msg_c1": true}, e.kept())
	require.NoError(t, (&eraseCmd{Provider: "standard", DedupKey: "msg_b1", Actor: "dpo"}).Run(g))
	assert.Equal(t, map[string]bool{"msg_a1": false, "msg_a2": false, "msg_b1": false, "msg_c1": true}, e.kept())

	status, body := e.post("/v1/inbox/erase", "tok-read-0123456789", `{"payment":"standard/pay_c"}`)
	assert.Equal(t, http.StatusForbidden, status, body)
	status, body = e.post("/v1/inbox/erase", "tok-admin-0123456789", `{"payment":"pay_c"}`)
	assert.Equal(t, http.StatusBadRequest, status, body)
	assert.True(t, e.kept()["msg_c1"], "nothing erased by a refused request")
	status, body = e.post("/v1/inbox/erase", "tok-admin-0123456789", `{"payment":"standard/pay_c"}`)
	require.Equal(t, http.StatusOK, status, body)
	assert.JSONEq(t, `{"inbox_rows":1,"conflict_rows":0}`, body)
	assert.False(t, e.kept()["msg_c1"])
	assert.Equal(t, []string{
		"dpo request payment standard/pay_a 2",
		"dpo request delivery standard msg_b1 1",
		"alice request payment standard/pay_c 1",
	}, e.erasures())

	// Every body is gone: the history rebuilds and verifies all the same.
	require.NoError(t, (&rebuildCmd{All: true, BatchSize: 100}).Run(g))
	require.NoError(t, verifyCmd{}.Run(g))
	var sales int64
	require.NoError(t, e.pool.QueryRow(context.Background(),
		`SELECT balance FROM account_balances WHERE account = 'revenue:sales' AND currency = 'USD'`).Scan(&sales))
	assert.EqualValues(t, -3500, sales, "the rebuilt ledger from events alone")
}

// TestRawRetention: the app's retention worker erases raw bodies first
// seen longer ago than ONCELEDGER_RAW_RETENTION, and only those, and
// records the erasure.
func TestRawRetention(t *testing.T) {
	e := startErasable(t, time.Hour)
	e.deliver("msg_old", "payment.captured", capture("pay_old", "cap_old", 1000))
	_, err := e.pool.Exec(context.Background(),
		`UPDATE webhook_inbox SET first_seen_at = now() - interval '2 hours' WHERE dedup_key = 'msg_old'`)
	require.NoError(t, err)
	e.deliver("msg_new", "payment.captured", capture("pay_new", "cap_new", 1000))
	require.Eventually(t, func() bool { return !e.kept()["msg_old"] }, 20*time.Second, 20*time.Millisecond,
		"the retention worker erases the old body")
	assert.Equal(t, map[string]bool{"msg_old": false, "msg_new": true}, e.kept())
	require.Equal(t, []string{"retention retention first seen before now - 1h0m0s 1"}, e.erasures())
}
