package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSampleFollowsTheServersAddress: README changes the server's address with
// ONCELEDGER_ADDR; `sample` must post there too, not to :8080 (issue 39).
// A listen address with no host (":PORT", "0.0.0.0:PORT", "[::]:PORT") is
// reached on loopback.
func TestSampleFollowsTheServersAddress(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got <- r.URL.Path
		_, _ = io.WriteString(w, `{"status":"accepted"}`)
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(l.Addr().String())
	require.NoError(t, err)

	for _, addr := range []string{":" + port, "0.0.0.0:" + port, "127.0.0.1:" + port} {
		t.Run(addr, func(t *testing.T) {
			t.Setenv("ONCELEDGER_ADDR", addr)
			t.Setenv("ONCELEDGER_STANDARD_SECRETS", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
			c, kctx, err := parse([]string{"sample"}, os.Environ())
			require.NoError(t, err)
			require.NoError(t, kctx.Run(&globals{ctx: context.Background(), log: slog.New(slog.DiscardHandler), cli: c}))
			assert.Equal(t, "/webhooks/standard", <-got)
		})
	}

	t.Run("--url wins", func(t *testing.T) {
		t.Setenv("ONCELEDGER_ADDR", "127.0.0.1:1")
		t.Setenv("ONCELEDGER_STANDARD_SECRETS", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
		c, kctx, err := parse([]string{"sample", "--url", srv.URL}, os.Environ())
		require.NoError(t, err)
		require.NoError(t, kctx.Run(&globals{ctx: context.Background(), log: slog.New(slog.DiscardHandler), cli: c}))
		assert.Equal(t, "/webhooks/standard", <-got)
	})
}
