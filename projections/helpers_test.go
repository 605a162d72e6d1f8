package projections_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections"
)

// fixture is one test database with the Postgres event store, the
// read-model store and the projection service over them.
type fixture struct {
	t     *testing.T
	pool  *pgxpool.Pool
	es    *postgres.EventStore
	db    *readmodel.Store
	svc   *projections.Service
	mu    sync.Mutex
	count map[string]int // events appended per stream
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	pool := pgtest.NewPool(t)
	es := postgres.NewEventStore(pool)
	db := readmodel.New(pool)
	return &fixture{t: t, pool: pool, es: es, db: db, svc: projections.NewService(es, db, nil), count: map[string]int{}}
}

// onReadModelPool moves the fixture's read models and projectors onto
// read-model connections, as serve and the CLI make them (the feed horizon
// passes their transactions), and returns that pool.
func (f *fixture) onReadModelPool(ctx context.Context) *pgxpool.Pool {
	f.t.Helper()
	rm, err := postgres.NewReadModelPool(ctx, f.pool)
	require.NoError(f.t, err)
	f.t.Cleanup(rm.Close)
	f.db = readmodel.New(rm)
	f.svc = projections.NewService(f.es, f.db, nil)
	return rm
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// appendEvents appends domain events to stream with the right expected
// version.
func (f *fixture) appendEvents(ctx context.Context, stream string, evs ...payment.Event) {
	f.t.Helper()
	data := make([]eventstore.EventData, len(evs))
	for i, e := range evs {
		typ, body, err := payment.Encode(e)
		require.NoError(f.t, err, "encode")
		data[i] = eventstore.EventData{ID: uuid.New(), Type: typ, Data: body}
	}
	f.appendRaw(ctx, stream, data...)
}

func (f *fixture) appendRaw(ctx context.Context, stream string, data ...eventstore.EventData) {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	_, err := f.es.Append(ctx, stream, eventstore.ExpectFor(f.count[stream]), data)
	require.NoError(f.t, err, "append to %s", stream)
	f.count[stream] += len(data)
}

// run starts the service's projectors until the returned stop is called.
func (f *fixture) run(ctx context.Context) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.svc.Run(ctx) }()
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
}

// feed waits until every event appended so far is readable (an open
// transaction anywhere on the server holds the feed back), and returns the
// whole feed.
func (f *fixture) feed(ctx context.Context) []eventstore.RecordedEvent {
	f.t.Helper()
	want := f.total()
	var all []eventstore.RecordedEvent
	require.Eventually(f.t, func() bool {
		all = nil
		for at := eventstore.Start; ; {
			evs, err := f.es.ReadAll(ctx, at, 10000)
			if err != nil || len(evs) == 0 {
				return err == nil && len(all) == want
			}
			all = append(all, evs...)
			at = evs[len(evs)-1].Position
		}
	}, 60*time.Second, 20*time.Millisecond, "the feed never had the %d events appended", want)
	return all
}

// waitCaughtUp waits until the named projections (all when none) have
// projected every event appended so far.
func (f *fixture) waitCaughtUp(ctx context.Context, names ...string) {
	f.t.Helper()
	all := f.feed(ctx)
	head := eventstore.Start
	if len(all) > 0 {
		head = all[len(all)-1].Position
	}
	if len(names) == 0 {
		names = f.svc.Names()
	}
	require.Eventually(f.t, func() bool {
		// Errors are tolerated: tests kill connections.
		cps, err := f.db.Checkpoints(ctx)
		done := err == nil
		for _, cp := range cps {
			if slices.Contains(names, cp.Name) {
				done = done && cp.Position == head
			}
		}
		return done
	}, 60*time.Second, 20*time.Millisecond, "projections %v did not catch up with %s", names, head)
}

type acctCur struct{ account, currency string }

// balances reads account_balances.
func (f *fixture) balances(ctx context.Context) map[acctCur]int64 {
	f.t.Helper()
	rows, err := f.pool.Query(ctx, `SELECT account, currency, balance FROM account_balances`)
	require.NoError(f.t, err, "balances")
	out := map[acctCur]int64{}
	var k acctCur
	var b int64
	_, err = pgx.ForEachRow(rows, []any{&k.account, &k.currency, &b}, func() error {
		out[k] = b
		return nil
	})
	require.NoError(f.t, err, "balances")
	return out
}

// checkPayments compares the payments table with the model (every stream
// the model knows, and no other) and each row's version with the model's
// event count.
func (f *fixture) checkPayments(ctx context.Context, m *model) {
	f.t.Helper()
	rows, err := f.pool.Query(ctx, `SELECT stream_id, provider, payment_id, captured_amount, fee_amount,
		refunded_amount, dispute_open_amount, dispute_lost_amount, version FROM payments`)
	require.NoError(f.t, err)
	got := map[string]paymentModel{}
	versions := map[string]int64{}
	var stream string
	var pm paymentModel
	var v int64
	_, err = pgx.ForEachRow(rows, []any{&stream, &pm.provider, &pm.id, &pm.captured, &pm.fees, &pm.refunded, &pm.disputeOpen, &pm.disputeLost, &v},
		func() error {
			got[stream], versions[stream] = pm, v
			return nil
		})
	require.NoError(f.t, err)
	assert.Len(f.t, got, len(m.payments), "payments rows")
	for s, want := range m.payments {
		w := want
		w.events = 0
		assert.Equal(f.t, w, got[s], "payment %s", s)
		assert.Equal(f.t, int64(want.events-1), versions[s], "payment %s: version", s)
	}
}

// checkReconciliation compares reconciliation_items with the model: every
// item, open or resolved as the model says.
func (f *fixture) checkReconciliation(ctx context.Context, m *model) {
	f.t.Helper()
	rows, err := f.pool.Query(ctx, `SELECT stream_id || '/' || kind || '/' || item_key, status = 'open' FROM reconciliation_items`)
	require.NoError(f.t, err)
	items := map[string]bool{}
	var key string
	var open bool
	_, err = pgx.ForEachRow(rows, []any{&key, &open}, func() error {
		items[key] = open
		return nil
	})
	require.NoError(f.t, err)
	assert.Equal(f.t, m.open, items, "reconciliation items: open or resolved")
}

// model is the test's own bookkeeping of what the generated events mean,
// written from docs/reference.md's chart of accounts without the domain's
// Postings, so that the projection is checked against an independent sum.
type model struct {
	balances map[acctCur]int64
	payments map[string]paymentModel // by stream
	open     map[string]bool         // reconciliation items by stream/kind/key: open?
}

type paymentModel struct {
	provider, id             string
	captured, fees, refunded int64
	disputeOpen, disputeLost int64
	events                   int
}

func newModel() *model {
	return &model{balances: map[acctCur]int64{}, payments: map[string]paymentModel{}, open: map[string]bool{}}
}

func (m *model) post(account string, c money.Currency, amount int64) {
	m.balances[acctCur{account, string(c)}] += amount
}

// checkBalances compares the table with the model; an account missing on
// one side counts as zero.
func (m *model) checkBalances(t *testing.T, got map[acctCur]int64) {
	t.Helper()
	keys := map[acctCur]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range m.balances {
		keys[k] = true
	}
	for k := range keys {
		assert.Equal(t, m.balances[k], got[k], "balance %s %s", k.account, k.currency)
	}
	assert.NotEmpty(t, got, "no balances at all")
}

// generator produces a mixed feed: payments of two providers in two
// currencies with captures, fees, refunds, disputes, failures,
// reconciliation items, and payouts; streams interleaved.
type generator struct {
	rng  *rand.Rand
	m    *model
	next int
}

func newGenerator(seed uint64) *generator {
	return &generator{rng: rand.New(rand.NewPCG(seed, 42)), m: newModel()}
}

type appendOp struct {
	stream string
	events []payment.Event
}

// payments returns the appends for n more payments (and some payouts), in
// an interleaved order, and updates the model.
func (g *generator) payments(n int) []appendOp {
	var perStream [][]appendOp
	for range n {
		i := g.next
		g.next++
		prov := []string{"stripe", "adyen"}[i%2]
		cur := money.Currency([]string{"USD", "EUR"}[(i/2)%2])
		id := fmt.Sprintf("pay_%d", i)
		stream := delivery.PaymentStream(prov, id)
		at := time.Date(2026, 11, 1+i%28, 10, 0, 0, 0, time.UTC)
		meta := func(k string) payment.Meta {
			return payment.Meta{Provider: prov, PaymentKey: id, DedupKey: id + "-" + k, OccurredAt: at}
		}
		amount := int64(1000 + g.rng.IntN(100000))
		fee := int64(g.rng.IntN(300))
		pm := paymentModel{provider: prov, id: id}
		var ops []appendOp
		add := func(evs ...payment.Event) {
			ops = append(ops, appendOp{stream: stream, events: evs})
			pm.events += len(evs)
		}
		add(payment.Authorized{Meta: meta("auth"), AuthorizationID: "auth_" + id, Amount: amount, Currency: cur})
		if i%11 == 10 {
			add(payment.Failed{Meta: meta("fail"), Reason: "declined"})
			g.m.payments[stream] = pm
			perStream = append(perStream, ops)
			continue
		}
		add(payment.Captured{Meta: meta("cap"), CaptureID: "cap_" + id, Amount: amount, Fee: fee, Currency: cur})
		g.m.post("provider:"+prov+":balance", cur, amount-fee)
		g.m.post("expenses:fees:"+prov, cur, fee)
		g.m.post("revenue:sales", cur, -amount)
		pm.captured, pm.fees = amount, fee
		if i%3 == 0 {
			r := amount / int64(1+g.rng.IntN(2))
			add(payment.RefundPosted{Meta: meta("ref"), RefundID: "re_" + id, Amount: r, Currency: cur})
			g.m.post("revenue:refunds", cur, r)
			g.m.post("provider:"+prov+":balance", cur, -r)
			pm.refunded = r
		}
		if i%5 == 0 {
			d := amount
			add(payment.DisputeOpened{Meta: meta("dp"), DisputeID: "dp_" + id, Amount: d, Currency: cur})
			g.m.post("receivable:disputes:"+prov, cur, d)
			g.m.post("provider:"+prov+":balance", cur, -d)
			pm.disputeOpen = d
			switch i % 3 {
			case 0:
				add(payment.DisputeLost{Meta: meta("dl"), DisputeID: "dp_" + id, Amount: d, Currency: cur})
				g.m.post("expenses:disputes", cur, d)
				g.m.post("receivable:disputes:"+prov, cur, -d)
				pm.disputeOpen, pm.disputeLost = 0, d
			case 1:
				add(payment.DisputeWon{Meta: meta("dw"), DisputeID: "dp_" + id, Amount: d, Currency: cur})
				g.m.post("provider:"+prov+":balance", cur, d)
				g.m.post("receivable:disputes:"+prov, cur, -d)
				pm.disputeOpen = 0
			}
		}
		if i%7 == 0 {
			key := stream + "/" + payment.ReconAmountMismatch + "/cap_" + id
			add(payment.Flagged{Meta: meta("flag"), Kind: payment.ReconAmountMismatch, Key: "cap_" + id, Details: "two amounts"})
			g.m.open[key] = true
			if i%14 == 0 {
				add(payment.Cleared{Meta: meta("clear"), Kind: payment.ReconAmountMismatch, Key: "cap_" + id, Details: "settled"})
				g.m.open[key] = false
			}
		}
		g.m.payments[stream] = pm
		perStream = append(perStream, ops)
		if i%25 == 24 {
			p := int64(500 + g.rng.IntN(1000))
			pid := fmt.Sprintf("po_%d", i)
			perStream = append(perStream, []appendOp{{stream: delivery.PayoutStream(prov, pid), events: []payment.Event{
				payment.PayoutPaid{Meta: payment.Meta{Provider: prov, PaymentKey: pid, DedupKey: pid, OccurredAt: at}, PayoutID: pid, Amount: p, Currency: cur},
			}}})
			g.m.post("bank:payouts", cur, p)
			g.m.post("provider:"+prov+":balance", cur, -p)
		}
	}
	// Interleave: round r takes every stream's r-th append.
	var out []appendOp
	for r := 0; ; r++ {
		any := false
		for _, ops := range perStream {
			if r < len(ops) {
				out = append(out, ops[r])
				any = true
			}
		}
		if !any {
			return out
		}
	}
}

// total is the number of events appended so far.
func (f *fixture) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.count {
		n += c
	}
	return n
}

func serverURL() string {
	if u := os.Getenv(pgtest.EnvURL); u != "" {
		return u
	}
	return pgtest.DefaultURL
}

func (f *fixture) apply(ctx context.Context, ops []appendOp) {
	f.t.Helper()
	for _, op := range ops {
		f.appendEvents(ctx, op.stream, op.events...)
	}
}
