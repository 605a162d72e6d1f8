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
	n   atomic.Int64
	mu  sync.Mutex
	log []string
}

func (c *statementCounter) count(sql string) {
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
	c.log = nil
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
	return sent
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
