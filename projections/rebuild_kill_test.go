package projections_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
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

// rebuildChildMode says where the child stops: "load" (during the COPY,
// --swap-all) or "indexes" (into empty tables, at the index build).
const rebuildChildMode = "REBUILD_KILL_CHILD_MODE"

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

	cmd, lines, _ := startKillChild(ctx, t, f, "load")
	require.True(t, waitLine(lines, "rebuild child: loading"), "the child never reported its load")
	// Entries are COPYed beside the batches: wait for some to land.
	require.Eventually(t, func() bool {
		var n int64
		err := f.pool.QueryRow(ctx, `SELECT count(*) FROM ledger_entries_shadow`).Scan(&n)
		return err == nil && n > 0
	}, 30*time.Second, 10*time.Millisecond, "no entries loaded")
	killChild(ctx, t, f, cmd, nil)

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
	assertNoShadowLeft(ctx, t, f)
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

// TestRebuildKilledDuringTheIndexBuild kills (SIGKILL) a rebuild into
// empty live tables (a read model restored empty, checkpoints at the start:
// its shadows are LOGGED from the start) while it builds the shadows'
// indexes: one build waits on a lock this test holds on the ledger's
// shadow when the kill comes. The live tables stay empty and their
// checkpoints at the start; the next rebuild starts over and swaps in what
// the live path made of the same history.
func TestRebuildKilledDuringTheIndexBuild(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := ctxT(t)
	g := newGenerator(34)
	f.apply(ctx, g.payments(150))
	stop := f.run(ctx)
	f.waitCaughtUp(ctx)
	require.NoError(t, stop())
	want := tableContents(ctx, t, f.pool)
	emptyReadModel(ctx, t, f.pool, true)
	before := tableContents(ctx, t, f.pool)
	cpsBefore, err := f.db.Checkpoints(ctx)
	require.NoError(t, err)

	cmd, lines, stdin := startKillChild(ctx, t, f, "indexes")
	require.True(t, waitLine(lines, "rebuild child: indexing"), "the child never reached the index build")
	var persistence string
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT relpersistence::text FROM pg_class WHERE relname = 'ledger_entries_shadow'`).Scan(&persistence))
	assert.Equal(t, "p", persistence, "the shadow of an empty live table is LOGGED from the start")
	lock, err := f.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback(context.WithoutCancel(ctx)) }()
	_, err = lock.Exec(ctx, `LOCK TABLE ledger_entries_shadow IN ROW EXCLUSIVE MODE`)
	require.NoError(t, err)
	_, err = fmt.Fprintln(stdin, "go on")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var n int
		err := f.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = $1 AND wait_event_type = 'Lock'
			  AND query ~* '^\s*(CREATE|ALTER|ANALYZE)'`, postgres.ReadModelApplicationName).Scan(&n)
		return err == nil && n > 0
	}, 30*time.Second, 10*time.Millisecond, "no index build of the child waited on the lock")
	killChild(ctx, t, f, cmd, func() { require.NoError(t, lock.Rollback(ctx)) })

	assert.Equal(t, before, tableContents(ctx, t, f.pool), "live tables after the kill")
	cps, err := f.db.Checkpoints(ctx)
	require.NoError(t, err)
	require.Len(t, cps, len(cpsBefore))
	for i, cp := range cps {
		assert.Equal(t, cpsBefore[i].Position, cp.Position, "checkpoint of %s after the kill", cp.Name)
	}
	rep, err := f.svc.Rebuild(ctx, nil, projections.RebuildOptions{BatchSize: 64})
	require.NoError(t, err, "the rebuild after the kill")
	assert.Empty(t, rep.Differences)
	assert.True(t, rep.Swapped)
	assert.Equal(t, want, tableContents(ctx, t, f.pool), "live tables after the second rebuild")
	assertNoShadowLeft(ctx, t, f)
}

// startKillChild starts TestRebuildKillChild in a process of its own,
// rebuilding f's database until it stops where mode says (see there),
// with its output's lines and its input.
func startKillChild(ctx context.Context, t *testing.T, f *fixture, mode string) (*exec.Cmd, *bufio.Scanner, io.Writer) {
	t.Helper()
	u, err := url.Parse(f.pool.Config().ConnString())
	require.NoError(t, err)
	q := u.Query()
	q.Set("application_name", rebuildChildApp)
	u.RawQuery = q.Encode()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestRebuildKillChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), rebuildChildDB+"="+u.String(), rebuildChildMode+"="+mode)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	return cmd, bufio.NewScanner(out), in
}

// waitLine reads lines until want, false if the output ends first.
func waitLine(lines *bufio.Scanner, want string) bool {
	for lines.Scan() {
		if lines.Text() == want {
			return true
		}
	}
	return false
}

// killChild kills the child (SIGKILL), runs then (if set: a backend
// waiting on a lock notices its client gone only once it gets the lock),
// and waits for the child's connections to go: those of its event store
// (rebuildChildApp) and of its read model (which rebuilds on a pool of its
// own name; the fixture's pool has neither name).
func killChild(ctx context.Context, t *testing.T, f *fixture, cmd *exec.Cmd, then func()) {
	t.Helper()
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	if then != nil {
		then()
	}
	require.Eventually(t, func() bool {
		var n int
		err := f.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name IN ($1, $2)`,
			rebuildChildApp, postgres.ReadModelApplicationName).Scan(&n)
		return err == nil && n == 0
	}, 30*time.Second, 10*time.Millisecond, "the killed child's connections stayed")
}

// assertNoShadowLeft checks that no shadow table, index or moved-aside
// table is left.
func assertNoShadowLeft(ctx context.Context, t *testing.T, f *fixture) {
	t.Helper()
	var leftovers int
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace
		AND (relname LIKE '%\_shadow%' OR relname LIKE '%\_old' OR relname LIKE '%\_sh')`).Scan(&leftovers))
	assert.Zero(t, leftovers, "leftover shadow objects")
}

// TestRebuildKillChild is the kill tests' child process:
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
	if os.Getenv(rebuildChildMode) == "indexes" {
		// Into the empty live tables, until the index build; there it says
		// so and waits for a line before it goes on, building until killed.
		opts := projections.WithPhaseHook(projections.RebuildOptions{BatchSize: 16}, func(phase string) {
			if phase == projections.HookIndexes {
				fmt.Println("rebuild child: indexing")
				_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
			}
		})
		_, err = svc.Rebuild(ctx, nil, opts)
		t.Fatalf("the rebuild ended before it was killed: %v", err)
	}
	batches := 0
	_, err = svc.Rebuild(ctx, nil, projections.RebuildOptions{SwapAll: true, BatchSize: 16, Progress: func(int64, int64) {
		if batches++; batches == 3 {
			fmt.Println("rebuild child: loading")
			select {} // until killed
		}
	}})
	t.Fatalf("the rebuild ended before it was killed: %v", err)
}
