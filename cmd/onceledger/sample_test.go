package main

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/standard"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
)

// TestSampleTwiceIsADuplicate is the README's walk-through: `onceledger
// sample` twice. The second run signs the same facts at another time, so its
// bytes differ; it is a plain duplicate and opens no conflict (issue 14).
func TestSampleTwiceIsADuplicate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the app against Postgres")
	}
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	sw, err := standard.New([]string{secret}, 5*time.Minute)
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	a, err := app.New(ctx, app.Config{
		DatabaseURL:     pgtest.NewDatabase(t),
		Providers:       map[string]providers.Adapter{standard.Name: sw},
		ShutdownTimeout: 5 * time.Second,
		Logger:          slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- a.Serve(ctx, l) }()
	t.Cleanup(func() {
		stop()
		assert.NoError(t, <-served)
		a.Close()
	})

	g := &globals{ctx: ctx, log: slog.New(slog.DiscardHandler), cli: &cli{}}
	at := time.Now()
	for i := range 2 {
		c := &sampleCmd{Provider: "standard", URL: "http://" + l.Addr().String(), ID: "msg_sample_1", Payment: "pay_sample_1",
			Amount: 1000, Currency: "USD", StandardSecrets: []string{secret}, at: at.Add(time.Duration(i) * 2 * time.Second)}
		require.NoError(t, c.Run(g), "sample %d", i+1)
	}

	var deliveries, conflicts, conflictRows int
	require.NoError(t, a.Pool().QueryRow(ctx, `
		SELECT delivery_count, conflict_count, (SELECT count(*) FROM webhook_conflicts)
		FROM webhook_inbox WHERE dedup_key = 'msg_sample_1'`).Scan(&deliveries, &conflicts, &conflictRows))
	assert.Equal(t, 2, deliveries)
	assert.Zero(t, conflicts, "conflict_count")
	assert.Zero(t, conflictRows, "webhook_conflicts rows")
	evs, err := a.Events().ReadStream(ctx, "payment-standard-pay_sample_1")
	require.NoError(t, err)
	assert.Len(t, evs, 1, "the capture once, no conflict flag")
}
