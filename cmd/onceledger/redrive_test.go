package main

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/standard"
)

// `onceledger redrive` re-normalizes an ignored delivery that the current
// code handles and records its facts, with the CLI user as the actor.
func TestRedriveCommand(t *testing.T) {
	live := startLiveApp(t)
	pay, key := fmt.Sprintf("pay_cli_%d", time.Now().UnixNano()), fmt.Sprintf("msg_cli_%d", time.Now().UnixNano())
	live.legacyIgnored(key, "payment.captured", map[string]any{"payment_id": pay, "capture_id": "cap_1", "amount": 990, "currency": "USD"})
	require.Equal(t, "ignored", live.deliver(fmt.Sprintf("msg_cli_ignored_%d", time.Now().UnixNano()), "customer.created", time.Now(), map[string]any{"customer_id": "c"}))

	g := &globals{ctx: context.Background(), log: slog.New(slog.DiscardHandler), cli: &cli{DatabaseURL: live.dbURL, EventStore: "postgres"}}
	c := &redriveCmd{Provider: "standard", Status: "ignored", Actor: "carol"}
	c.Serve.set().Config(standard.Name).(*standard.Config).Secrets = []string{consoleSecret}
	c.Serve.WebhookTolerance = 5 * time.Minute
	c.Serve.ShutdownTimeout = time.Second
	require.NoError(t, c.Run(g))

	var status, by string
	require.NoError(t, live.app.Pool().QueryRow(context.Background(),
		`SELECT status, redriven_by FROM webhook_inbox WHERE dedup_key = $1`, key).Scan(&status, &by))
	assert.Equal(t, "applied", status)
	assert.Equal(t, "cli:carol", by)
	recs, err := live.app.Events().Store.ReadStream(context.Background(), "payment-standard-"+pay)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, "payment.captured", recs[0].Type)

	c.Provider = "stripe"
	assert.ErrorContains(t, c.Run(g), `provider "stripe" is not configured`)
}
