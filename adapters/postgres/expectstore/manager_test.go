package expectstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/esdb"
	"github.com/onceledger/onceledger/adapters/esdb/esdbfake"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/expectations"
	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/expectstore"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/expectation"
	"github.com/onceledger/onceledger/domain/payment"
)

// world is one event store (either kind) with the manager's Postgres side.
type world struct {
	store eventstore.Store
	pool  *pgxpool.Pool
	ops   *operations.Expectations
	now   time.Time
	mu    sync.Mutex
}

func (w *world) clock() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

func (w *world) advance(d time.Duration) {
	w.mu.Lock()
	w.now = w.now.Add(d)
	w.mu.Unlock()
}

func (w *world) manager(owner string) *expectations.Manager {
	return expectations.New(w.store, w.ops, expectstore.New(w.pool), expectations.Config{Owner: owner, Now: w.clock,
		QueryAfter: 15 * time.Minute, Batch: 7})
}

func worlds(t *testing.T) map[string]func(t *testing.T) *world {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	mk := func(store eventstore.Store, pool *pgxpool.Pool) *world {
		w := &world{store: store, pool: pool, now: t0}
		w.ops = operations.NewExpectations(store, w.clock)
		return w
	}
	return map[string]func(t *testing.T) *world{
		"postgres": func(t *testing.T) *world {
			pool := pgtest.NewPool(t)
			return mk(postgres.NewEventStore(pool), pool)
		},
		"esdb": func(t *testing.T) *world {
			fake := esdbfake.Start(t)
			s, err := esdb.Dial(fake.URL())
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return mk(s, pgtest.NewPool(t))
		},
	}
}

// capture appends a capture to a payment stream as the ingest would, the
// merchant's references in its metadata.
func capture(t *testing.T, ctx context.Context, s eventstore.Store, provider, paymentKey, captureID string, amount int64, refs ...string) {
	t.Helper()
	e := payment.Captured{Meta: payment.Meta{Provider: provider, PaymentKey: paymentKey, DedupKey: "d-" + captureID,
		OccurredAt: time.Date(2026, 12, 1, 10, 5, 0, 0, time.UTC)}, CaptureID: captureID, Amount: amount, Currency: "CNY"}
	typ, data, err := payment.Encode(e)
	require.NoError(t, err)
	md := []byte(`{}`)
	if len(refs) > 0 {
		md = []byte(`{"references":["` + refs[0] + `"]}`)
	}
	_, err = s.Append(ctx, delivery.PaymentStream(provider, paymentKey), eventstore.Any,
		[]eventstore.EventData{{ID: uuid.New(), Type: typ, Data: data, Metadata: md}})
	require.NoError(t, err)
}

// drain steps the manager until it has handled every event appended so
// far. A step that reads nothing is not enough: the Postgres feed shows an
// event only once every transaction that began before it has ended, in any
// database of the cluster (the horizon), so under other tests' load a step
// can read nothing while events wait; drain then steps again until the
// manager's checkpoint reaches the last event appended (on the EventStoreDB
// world this pool's events table is empty: caught up at once).
func (w *world) drain(t *testing.T, ctx context.Context, m *expectations.Manager) {
	t.Helper()
	var last int64
	require.NoError(t, w.pool.QueryRow(ctx, `SELECT coalesce(max(tx_id), 0) FROM events`).Scan(&last))
	for range 3000 {
		n, err := m.Step(ctx)
		require.NoError(t, err)
		if n > 0 {
			continue
		}
		var at int64
		require.NoError(t, w.pool.QueryRow(ctx, `SELECT coalesce(max(commit_pos), 0) FROM expectation_checkpoint`).Scan(&at))
		if at >= last {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("the manager never caught up")
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("the manager never caught up")
}

func status(t *testing.T, ctx context.Context, pool *pgxpool.Pool, provider, ref string) (st string, late bool) {
	t.Helper()
	err := pool.QueryRow(ctx, `SELECT status, late FROM expected_payments WHERE provider = $1 AND reference = $2`, provider, ref).Scan(&st, &late)
	require.NoError(t, err)
	return st, late
}

// A capture whose merchant reference names an expectation pays it, before
// or after the registration; one of another amount opens amount_mismatch;
// expires_at passing makes it overdue with its item, and a capture after
// that pays it late and clears the item; restarting the manager (a new
// instance at the checkpoint) and replaying decide nothing twice.
func TestManagerFollowsTheFeedAndTheClock(t *testing.T) {
	for name, open := range worlds(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			w := open(t)
			reg := func(ref string, amount int64) uuid.UUID {
				x, _, err := w.ops.Register(ctx, expectation.RegisterCommand{Provider: "alipay", Reference: ref, Amount: amount,
					Currency: "CNY", ExpiresAt: w.clock().Add(time.Hour), Actor: "shop"})
				require.NoError(t, err)
				return x.ID
			}
			reg("ORDER-A", 1000) // paid by a later capture
			capture(t, ctx, w.store, "alipay", "T-B", "T-B", 2000, "ORDER-B")
			reg("ORDER-B", 2000) // registered after its capture
			reg("ORDER-C", 3000) // paid 2999: amount_mismatch
			late := reg("ORDER-D", 4000)
			m := w.manager("one")
			w.drain(t, ctx, m)
			capture(t, ctx, w.store, "alipay", "T-A", "T-A", 1000, "ORDER-A")
			capture(t, ctx, w.store, "alipay", "T-C", "T-C", 2999, "ORDER-C")
			capture(t, ctx, w.store, "alipay", "T-X", "T-X", 999, "NOT-EXPECTED")
			w.drain(t, ctx, m)
			w.drain(t, ctx, m) // the rows of the paid events
			for _, ref := range []string{"ORDER-A", "ORDER-B", "ORDER-C"} {
				st, _ := status(t, ctx, w.pool, "alipay", ref)
				assert.Equal(t, "paid", st, ref)
			}
			st, _ := status(t, ctx, w.pool, "alipay", "ORDER-D")
			assert.Equal(t, "expected", st)

			w.advance(2 * time.Hour)
			w.drain(t, ctx, m)
			w.drain(t, ctx, m)
			st, _ = status(t, ctx, w.pool, "alipay", "ORDER-D")
			assert.Equal(t, "overdue", st)

			// A new instance (the first one's lease expired: a restart).
			_, err := w.pool.Exec(ctx, `UPDATE expectation_checkpoint SET lease_until = now() - interval '1 second'`)
			require.NoError(t, err)
			m2 := w.manager("two")
			capture(t, ctx, w.store, "alipay", "T-D", "T-D", 4000, "ORDER-D")
			w.drain(t, ctx, m2)
			w.drain(t, ctx, m2)
			st, isLate := status(t, ctx, w.pool, "alipay", "ORDER-D")
			assert.Equal(t, "paid", st)
			assert.True(t, isLate)
			_, err = m.Step(ctx)
			require.NoError(t, err, "the old instance does nothing while the new one holds the lease")

			// A replay from the start decides nothing twice.
			_, err = w.pool.Exec(ctx, `UPDATE expectation_checkpoint SET commit_pos = 0, prepare_pos = 0`)
			require.NoError(t, err)
			w.drain(t, ctx, m2)
			counts := map[string]int{}
			for _, ref := range []string{"ORDER-A", "ORDER-B", "ORDER-C", "ORDER-D"} {
				recs, err := w.store.ReadStream(ctx, expectation.StreamID(expectation.IDOf("alipay", ref)))
				require.NoError(t, err)
				for _, r := range recs {
					counts[r.Type]++
				}
			}
			assert.Equal(t, map[string]int{expectation.TypeRegistered: 4, expectation.TypePaid: 4, expectation.TypeOverdue: 1,
				payment.TypeFlagged: 2, payment.TypeCleared: 1}, counts)
			recs, err := w.store.ReadStream(ctx, expectation.StreamID(late))
			require.NoError(t, err)
			x, err := w.ops.Get(ctx, late)
			require.NoError(t, err)
			assert.Len(t, recs, x.Version)
		})
	}
}

// Captures kept longer than the window are forgotten; newer ones kept,
// however old the provider says they are (a backfill).
func TestPruneCaptures(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	st := expectstore.New(pool)
	old := time.Date(2020, 10, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, st.RecordPayments(ctx, []expectations.PaymentFact{
		{Provider: "alipay", Reference: "OLD", PaymentStream: "payment-alipay-1", CaptureID: "1", Amount: 1, Currency: "CNY", At: old},
		{Provider: "alipay", Reference: "NEW", PaymentStream: "payment-alipay-2", CaptureID: "2", Amount: 1, Currency: "CNY", At: old},
	}))
	_, err := pool.Exec(ctx, `UPDATE expectation_captures SET seen_at = now() - interval '31 days' WHERE reference = 'OLD'`)
	require.NoError(t, err)
	require.NoError(t, st.PruneCaptures(ctx, expectations.CaptureWindow))
	got, err := st.PaymentsOf(ctx, "alipay", "OLD")
	require.NoError(t, err)
	assert.Empty(t, got)
	got, err = st.PaymentsOf(ctx, "alipay", "NEW")
	require.NoError(t, err)
	assert.Len(t, got, 1)
}

// A payment canceled or closed unpaid makes its waiting expectation
// failed; a capture afterwards still pays it.
func TestManagerFailedThenPaid(t *testing.T) {
	for name, open := range worlds(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			w := open(t)
			x, _, err := w.ops.Register(ctx, expectation.RegisterCommand{Provider: "alipay", Reference: "ORDER-F", Amount: 500,
				Currency: "CNY", ExpiresAt: w.clock().Add(time.Hour), Actor: "shop"})
			require.NoError(t, err)
			closed := payment.Canceled{Meta: payment.Meta{Provider: "alipay", PaymentKey: "T-F", DedupKey: "n-closed",
				OccurredAt: w.clock()}, Reason: "TRADE_CLOSED: unpaid trade closed"}
			typ, data, err := payment.Encode(closed)
			require.NoError(t, err)
			_, err = w.store.Append(ctx, delivery.PaymentStream("alipay", "T-F"), eventstore.Any,
				[]eventstore.EventData{{ID: uuid.New(), Type: typ, Data: data, Metadata: []byte(`{"references":["ORDER-F"]}`)}})
			require.NoError(t, err)
			m := w.manager("f")
			w.drain(t, ctx, m)
			got, err := w.ops.Get(ctx, x.ID)
			require.NoError(t, err)
			assert.Equal(t, expectation.StatusFailed, got.Status)
			assert.Contains(t, got.Reason, "TRADE_CLOSED")

			capture(t, ctx, w.store, "alipay", "T-F2", "T-F2", 500, "ORDER-F")
			w.drain(t, ctx, m)
			got, err = w.ops.Get(ctx, x.ID)
			require.NoError(t, err)
			assert.Equal(t, expectation.StatusPaid, got.Status)
		})
	}
}

// A service provider's expectation, "{sub_mchid}/{out_trade_no}", is paid
// by the capture of that sub-merchant's order, not another's of the same
// out_trade_no.
func TestManagerServiceProviderReference(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := worlds(t)["postgres"](t)
	x, _, err := w.ops.Register(ctx, expectation.RegisterCommand{Provider: "wechatpay", Reference: "1900000201/WX-2", Amount: 400,
		Currency: "CNY", ExpiresAt: w.clock().Add(time.Hour), Actor: "shop"})
	require.NoError(t, err)
	for _, c := range []struct{ txn, sub string }{{"4200000009", "1900000999"}, {"4200000002", "1900000201"}} {
		e := payment.Captured{Meta: payment.Meta{Provider: "wechatpay", PaymentKey: c.txn, DedupKey: "d-" + c.txn, OccurredAt: w.clock()},
			CaptureID: c.txn, Amount: 400, Currency: "CNY", SubMerchant: c.sub}
		typ, data, err := payment.Encode(e)
		require.NoError(t, err)
		_, err = w.store.Append(ctx, delivery.PaymentStream("wechatpay", c.txn), eventstore.Any,
			[]eventstore.EventData{{ID: uuid.New(), Type: typ, Data: data, Metadata: []byte(`{"references":["WX-2"]}`)}})
		require.NoError(t, err)
	}
	w.drain(t, ctx, w.manager("sp"))
	got, err := w.ops.Get(ctx, x.ID)
	require.NoError(t, err)
	assert.Equal(t, expectation.StatusPaid, got.Status)
	assert.Equal(t, "4200000002", got.CaptureID, "the sub-merchant's own order")
}

// Two sub-merchants of one service provider with the same out_trade_no
// register two expectations ("{sub_mchid}/{out_trade_no}": the
// out_trade_no is unique within one merchant only), each paid by its own
// sub-merchant's capture, whatever order the captures come in.
func TestManagerServiceProviderSameOutTradeNo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := worlds(t)["postgres"](t)
	reg := func(ref string, amount int64) expectation.Expectation {
		x, _, err := w.ops.Register(ctx, expectation.RegisterCommand{Provider: "wechatpay", Reference: ref, Amount: amount,
			Currency: "CNY", ExpiresAt: w.clock().Add(time.Hour), Actor: "shop"})
		require.NoError(t, err)
		return x
	}
	a, b := reg("1900000201/WX-S", 400), reg("1900000202/WX-S", 500)
	require.NotEqual(t, a.ID, b.ID, "two expectations")
	for _, c := range []struct {
		txn, sub string
		amount   int64
	}{{"4200000302", "1900000202", 500}, {"4200000301", "1900000201", 400}} {
		e := payment.Captured{Meta: payment.Meta{Provider: "wechatpay", PaymentKey: c.txn, DedupKey: "d-" + c.txn, OccurredAt: w.clock()},
			CaptureID: c.txn, Amount: c.amount, Currency: "CNY", SubMerchant: c.sub}
		typ, data, err := payment.Encode(e)
		require.NoError(t, err)
		_, err = w.store.Append(ctx, delivery.PaymentStream("wechatpay", c.txn), eventstore.Any,
			[]eventstore.EventData{{ID: uuid.New(), Type: typ, Data: data, Metadata: []byte(`{"references":["WX-S"]}`)}})
		require.NoError(t, err)
	}
	w.drain(t, ctx, w.manager("sp2"))
	for _, c := range []struct {
		id     uuid.UUID
		txn    string
		amount int64
	}{{a.ID, "4200000301", 400}, {b.ID, "4200000302", 500}} {
		got, err := w.ops.Get(ctx, c.id)
		require.NoError(t, err)
		assert.Equal(t, expectation.StatusPaid, got.Status)
		assert.Equal(t, c.txn, got.CaptureID, "its own sub-merchant's order")
		assert.Equal(t, c.amount, got.PaidAmount, "paid by its own amount (no amount_mismatch)")
	}
}
