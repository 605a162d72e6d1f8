package ingest_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
)

// statementCounter is a pgx tracer counting the statements a pool sends:
// each query, each statement of a pipelined batch, BEGIN and COMMIT alike.
type statementCounter struct {
	n        atomic.Int64
	mu       sync.Mutex
	log      []string
	notifies []string // the statements that NOTIFY, whole
}

// wakePrefix begins the readers' wake-up, sent after a unit's commit in a
// transaction of its own (adapters/postgres/wake.go), coalesced across
// units: not a statement of any one unit.
const wakePrefix = "BEGIN; SET LOCAL synchronous_commit TO off; SELECT pg_notify("

func (c *statementCounter) count(sql string) {
	if strings.Contains(sql, "pg_notify") {
		c.mu.Lock()
		c.notifies = append(c.notifies, sql)
		c.mu.Unlock()
	}
	if strings.HasPrefix(sql, wakePrefix) {
		return
	}
	c.n.Add(1)
	sql = strings.Join(strings.Fields(sql), " ")
	if len(sql) > 40 {
		sql = sql[:40] + "…"
	}
	c.mu.Lock()
	c.log = append(c.log, sql)
	c.mu.Unlock()
}

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.count(d.SQL)
	return ctx
}
func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *statementCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (c *statementCounter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	c.count(d.SQL)
}
func (c *statementCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (c *statementCounter) reset() {
	c.n.Store(0)
	c.mu.Lock()
	c.log, c.notifies = nil, nil
	c.mu.Unlock()
}

func (c *statementCounter) statements() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.log...)
}

// tracedPool is a fresh database's pool whose statements c counts.
func tracedPool(t *testing.T, c *statementCounter) *pgxpool.Pool {
	cfg, err := pgxpool.ParseConfig(pgtest.NewDatabase(t))
	require.NoError(t, err)
	cfg.ConnConfig.Tracer = c
	pool, err := pgxpool.NewWithConfig(tctx(t), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// unitStatements records size first arrivals of distinct payments (each
// with twins concurrent redeliveries of its key, same facts, other bytes)
// queued together behind a held unit, so that they form ONE shared unit,
// and returns the statements sent from the held unit's release until every
// delivery was answered: the held unit's COMMIT, the shared unit's, and
// whatever counts the twins.
func unitStatements(t *testing.T, size, twins int) []string {
	sent, _ := unitStatementsAndNotifies(t, size, twins)
	return sent
}

// unitStatementsAndNotifies is unitStatements, with the statements of the
// window that NOTIFY, whole.
func unitStatementsAndNotifies(t *testing.T, size, twins int) ([]string, []string) {
	c := &statementCounter{}
	pool := tracedPool(t, c)
	store := postgres.NewEventStore(pool)
	j := &heldJournal{Journal: postgres.NewJournal(pool, store), entered: make(chan struct{}, 1), release: make(chan struct{})}
	svc := ingest.New(j, ingest.PaymentDecider{}, ingest.Options{Batch: ingest.BatchOptions{InFlight: 1}})
	ctx := tctx(t)
	var wg sync.WaitGroup
	errs := make(chan error, 1+size*(1+twins))
	send := func(want ingest.Outcome, ev func() (ingest.Result, error)) {
		wg.Go(func() {
			res, err := ev()
			if err == nil && res.Outcome != want {
				err = fmt.Errorf("answered %s, want %s", res.Outcome, want)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	lone := capture("pay_held", "evt_held", 1000)
	send(ingest.Accepted, func() (ingest.Result, error) { return svc.Ingest(ctx, lone) })
	<-j.entered
	for i := range size {
		ev := capture(fmt.Sprintf("pay_u%d", i), fmt.Sprintf("evt_u%d", i), 1000+int64(i))
		send(ingest.Accepted, func() (ingest.Result, error) { return svc.Ingest(ctx, ev) })
		// The twins queue after their first arrival: it is queued first.
		for ingest.Waiting(svc) < i*(1+twins)+1 {
			require.NoError(t, ctx.Err())
			runtime.Gosched()
		}
		for n := range twins {
			tw := withBody(ev, fmt.Sprintf("retry %d", n))
			send(ingest.Duplicate, func() (ingest.Result, error) { return svc.Ingest(ctx, tw) })
		}
	}
	for ingest.Waiting(svc) < size*(1+twins) {
		require.NoError(t, ctx.Err(), "the deliveries never queued")
		runtime.Gosched()
	}
	c.reset()
	close(j.release)
	wg.Wait()
	sent := c.statements()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, 2, j.units.Load(), "the deliveries formed one shared unit behind the held one")
	for i := range size {
		_, n := inboxRow(t, pool, fmt.Sprintf("evt_u%d", i))
		assert.Equal(t, 1+twins, n, "every arrival counted")
	}
	c.mu.Lock()
	notifies := append([]string(nil), c.notifies...)
	c.mu.Unlock()
	return sent, notifies
}

// TestSharedUnitDoesNotNotifyInsideItsTransaction: a unit that NOTIFYs holds
// Postgres's database-wide notify lock from its pre-commit through its WAL
// flush, so notifying units commit one after the other, each waiting for
// its own flush (adapters/postgres/wake.go; session 11 sampled Lock:object
// beside WALSync in the ingest's backends). The only NOTIFY is the readers'
// wake-up, a transaction of its own after the commit.
func TestSharedUnitDoesNotNotifyInsideItsTransaction(t *testing.T) {
	_, notifies := unitStatementsAndNotifies(t, 8, 1)
	for _, sql := range notifies {
		assert.True(t, strings.HasPrefix(sql, wakePrefix), "a statement of the unit notifies: %q", sql)
	}
}

// TestSharedUnitStatementsDoNotGrowWithItsSize: a group-committed unit
// writes each table with one statement whatever the number of its
// deliveries (issue 40 item 1), and twins that queued with their first
// arrival are counted by that unit's gate, not by a transaction of their
// own after its commit (before: one more statement, and one more commit
// with its WAL flush, for every unit that had twins).
func TestSharedUnitStatementsDoNotGrowWithItsSize(t *testing.T) {
	base := unitStatements(t, 1, 0)
	t.Logf("a unit of one, no twins: %d statements: %q", len(base), base)
	for _, tc := range []struct{ size, twins int }{{1, 1}, {8, 0}, {8, 2}, {32, 1}} {
		got := unitStatements(t, tc.size, tc.twins)
		assert.Len(t, got, len(base), "a unit of %d deliveries with %d twins each: %q", tc.size, tc.twins, got)
	}
}
