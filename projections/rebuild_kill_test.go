package projections_test

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/projections"
)

// rebuildChildDB names, in the environment of a child test process, the
// database TestRebuildKilledDuringTheLoad's child rebuilds.
const rebuildChildDB = "REBUILD_KILL_CHILD_DB"

// rebuildChildApp is the child's application_name, by which the parent
// sees its connections go.
const rebuildChildApp = "rebuild_kill_child"

// TestRebuildKilledDuringTheLoad kills (SIGKILL) a process in the middle
// of a rebuild's bulk load (COPY into the shadow tables; --swap-all, so the
// stored replay is the first and only one): the live tables and their
// checkpoints are untouched, and the next rebuild starts over cleanly (the
// lock went with the process's connections, the half-loaded shadows are
// made again), finds them equal to history and leaves no shadow behind.
func TestRebuildKilledDuringTheLoad(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := ctxT(t)
	g := newGenerator(33)
	f.apply(ctx, g.payments(150))
	stop := f.run(ctx)
	f.waitCaughtUp(ctx)
	require.NoError(t, stop())
	before := tableContents(ctx, t, f.pool)
	cpsBefore, err := f.db.Checkpoints(ctx)
	require.NoError(t, err)

	u, err := url.Parse(f.pool.Config().ConnString())
	require.NoError(t, err)
	q := u.Query()
	q.Set("application_name", rebuildChildApp)
	u.RawQuery = q.Encode()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestRebuildKillChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), rebuildChildDB+"="+u.String())
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(out)
	loading := false
	for !loading && lines.Scan() {
		loading = lines.Text() == "rebuild child: loading"
	}
	require.True(t, loading, "the child never reported its load")
	// Entries are COPYed beside the batches: wait for some to land.
	require.Eventually(t, func() bool {
		var n int64
		err := f.pool.QueryRow(ctx, `SELECT count(*) FROM ledger_entries_shadow`).Scan(&n)
		return err == nil && n > 0
	}, 30*time.Second, 10*time.Millisecond, "no entries loaded")
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.Eventually(t, func() bool {
		var n int
		err := f.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, rebuildChildApp).Scan(&n)
		return err == nil && n == 0
	}, 30*time.Second, 10*time.Millisecond, "the killed child's connections stayed")

	assert.Equal(t, before, tableContents(ctx, t, f.pool), "live tables after the kill")
	cps, err := f.db.Checkpoints(ctx)
	require.NoError(t, err)
	require.Len(t, cps, len(cpsBefore))
	for i, cp := range cps {
		assert.Equal(t, cpsBefore[i].Position, cp.Position, "checkpoint of %s after the kill", cp.Name)
	}

	rep, err := f.svc.Rebuild(ctx, nil, projections.RebuildOptions{SwapAll: true, BatchSize: 64})
	require.NoError(t, err, "the rebuild after the kill")
	assert.Empty(t, rep.Differences)
	assert.True(t, rep.Swapped)
	assert.Equal(t, int64(f.total()), rep.Events)
	assert.Equal(t, before, tableContents(ctx, t, f.pool), "live tables after the second rebuild")
	var leftovers int
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace
		AND (relname LIKE '%\_shadow%' OR relname LIKE '%\_old' OR relname LIKE '%\_sh')`).Scan(&leftovers))
	assert.Zero(t, leftovers, "leftover shadow objects")
	st, err := f.svc.Status(ctx)
	require.NoError(t, err)
	for _, p := range st.Projections {
		assert.Equal(t, projections.StatusStopped, p.Status, "status of %s", p.Name)
	}
	stop = f.run(ctx)
	defer func() { _ = stop() }()
	f.apply(ctx, g.payments(10))
	f.waitCaughtUp(ctx)
	g.m.checkBalances(t, f.balances(ctx))
}

// TestRebuildKillChild is TestRebuildKilledDuringTheLoad's child process:
// it does nothing unless started by it. It rebuilds as the CLI does (on
// read-model connections) and, a few batches into the load, says so and
// stops there until killed.
func TestRebuildKillChild(t *testing.T) {
	dbURL := os.Getenv(rebuildChildDB)
	if dbURL == "" {
		return
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	rm, err := postgres.NewReadModelPool(ctx, pool)
	require.NoError(t, err)
	svc := projections.NewService(postgres.NewEventStore(pool), readmodel.New(rm), nil)
	batches := 0
	_, err = svc.Rebuild(ctx, nil, projections.RebuildOptions{SwapAll: true, BatchSize: 16, Progress: func(int64, int64) {
		if batches++; batches == 3 {
			fmt.Println("rebuild child: loading")
			select {} // until killed
		}
	}})
	t.Fatalf("the rebuild ended before it was killed: %v", err)
}
