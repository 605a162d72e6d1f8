package app

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The monitor reads the status every 5 s for /metrics: its inbox counts go
// through an InboxCounter, so a count over a large inbox is not repeated
// every reading (it was: a parallel scan of the whole inbox every 5 s, a
// tenth of the machine during a settlement import; docs/benchmarks.md,
// "Where the machine's time goes"). One counter, shared by every copy of
// the reader.
func TestTheMonitorsInboxCountsAreBounded(t *testing.T) {
	url := os.Getenv("ONCELEDGER_TEST_DATABASE_URL")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	defer pool.Close()
	rs, err := openReadSide(ctx, url, pool, nil, false)
	require.NoError(t, err)
	defer rs.Close()
	require.True(t, rs.Projections.Options.Inbox)
	assert.NotNil(t, rs.Projections.Options.InboxCounter, "the monitor's status counts the whole inbox at every reading")
}
