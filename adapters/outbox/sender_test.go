package outbox_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/esdb"
	"github.com/onceledger/onceledger/adapters/esdb/esdbfake"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/outbox"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections/outbound"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var testKey = hex.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

// env is one database, an event store, the service and a sender's parts.
type env struct {
	t      *testing.T
	pool   *pgxpool.Pool
	store  eventstore.Store
	subs   *postgres.Subscriptions
	svc    *outbox.Service
	sealer *outbox.Sealer
	clock  *clock
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newEnv(t *testing.T, store eventstore.Store, pool *pgxpool.Pool) *env {
	sealer, err := outbox.ParseKey(testKey)
	require.NoError(t, err)
	e := &env{t: t, pool: pool, store: store, subs: postgres.NewSubscriptions(pool), sealer: sealer,
		clock: &clock{t: time.Now()}}
	e.svc = outbox.NewService(e.subs, store, outbox.ServiceOptions{Sealer: sealer, AllowPrivate: true, Now: e.clock.Now})
	return e
}

func newPostgresEnv(t *testing.T) *env {
	pool := pgtest.NewPool(t)
	return newEnv(t, postgres.NewEventStore(pool), pool)
}

func (e *env) sender(opts outbox.SenderOptions) *outbox.Sender {
	if opts.Poll == 0 {
		opts.Poll = 50 * time.Millisecond
	}
	return &outbox.Sender{Feed: outbound.NewFeed(e.store), Store: e.subs, Sealer: e.sealer,
		Client: outbox.NewClient(true), Now: e.clock.Now, Jitter: func() float64 { return 0.5 }, Options: opts}
}

// run runs s until the test ends (or stop is called).
func run(t *testing.T, s *outbox.Sender) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// capture appends the n-th capture of payment pi.
func (e *env) capture(ctx context.Context, pi string, n int) uuid.UUID {
	e.t.Helper()
	ev := payment.Captured{Meta: payment.Meta{Provider: "stripe", PaymentKey: pi, DedupKey: fmt.Sprintf("evt_%s_%d", pi, n),
		OccurredAt: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}, CaptureID: fmt.Sprintf("ch_%s_%d", pi, n), Amount: 1000, Currency: "USD"}
	typ, data, err := payment.Encode(ev)
	require.NoError(e.t, err)
	id := payment.EventID("stripe", ev.DedupKey, 0)
	stream := delivery.PaymentStream("stripe", pi)
	_, err = e.store.Append(ctx, stream, eventstore.Any, []eventstore.EventData{{ID: id, Type: typ, Data: data}})
	require.NoError(e.t, err)
	return outbound.PublicID(id)
}

// receiver records verified deliveries; fail decides an answer's status.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []received
	status func(r received, n int) int
	hits   atomic.Int64
	wh     *standardwebhooks.Webhook
}

type received struct {
	ID        string
	PaymentID string
	Body      []byte
	Header    http.Header
}

func newReceiver(t *testing.T, secret string, status func(r received, n int) int) *receiver {
	rc := &receiver{status: status}
	if secret != "" {
		wh, err := standardwebhooks.NewWebhook(secret)
		require.NoError(t, err)
		rc.wh = wh
	}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n := int(rc.hits.Add(1))
		var ev struct {
			PaymentID string `json:"payment_id"`
		}
		_ = json.Unmarshal(body, &ev)
		got := received{ID: r.Header.Get("webhook-id"), PaymentID: ev.PaymentID, Body: body, Header: r.Header.Clone()}
		if rc.wh != nil {
			if err := rc.wh.Verify(body, r.Header); err != nil {
				http.Error(w, err.Error(), http.StatusUnauthorized)
				return
			}
		}
		st := http.StatusOK
		if rc.status != nil {
			st = rc.status(got, n)
		}
		if st >= 200 && st < 300 {
			rc.mu.Lock()
			rc.got = append(rc.got, got)
			rc.mu.Unlock()
		}
		w.WriteHeader(st)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) acked() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

func (rc *receiver) setWebhook(t *testing.T, secret string) {
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	rc.mu.Lock()
	rc.wh = wh
	rc.mu.Unlock()
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ids(rs []received) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

// Every event after creation arrives once, signed so that the Standard
// Webhooks library verifies it, with webhook-id the event's id; events
// before the creation are not sent.
func TestSenderDeliversSignedEvents(t *testing.T) {
	for name, mk := range map[string]func(t *testing.T) *env{
		"postgres": newPostgresEnv,
		"esdb double": func(t *testing.T) *env {
			pool := pgtest.NewPool(t)
			fake := esdbfake.Start(t)
			es, err := esdb.Dial(fake.URL())
			require.NoError(t, err)
			t.Cleanup(func() { _ = es.Close() })
			return newEnv(t, es, pool)
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := testCtx(t)
			e := mk(t)
			e.capture(ctx, "pi_before", 1)
			var rc *receiver
			rc = newReceiver(t, "", nil)
			c, err := e.svc.Create(ctx, outbox.NewSubscription{URL: rc.srv.URL}, "ops", "")
			require.NoError(t, err)
			rc.setWebhook(t, c.Secret)
			run(t, e.sender(outbox.SenderOptions{}))
			var want []string
			for i := range 5 {
				want = append(want, e.capture(ctx, fmt.Sprintf("pi_%d", i), 1).String())
			}
			eventually(t, "all delivered", func() bool { return len(rc.acked()) >= len(want) })
			assert.ElementsMatch(t, want, ids(rc.acked()))
			for _, r := range rc.acked() {
				var ev outbound.Event
				require.NoError(t, json.Unmarshal(r.Body, &ev))
				assert.Equal(t, r.ID, ev.ID.String(), "webhook-id is the event id")
				assert.Equal(t, outbound.PaymentCaptured, ev.Type)
			}
		})
	}
}

// Per stream in order under failures: a payment's second event is not
// sent until its first is acknowledged, while another payment's events go
// on; the failed one is retried on the stored schedule and everything
// arrives, each id once acknowledged.
func TestSenderPerStreamOrderUnderFailures(t *testing.T) {
	ctx := testCtx(t)
	e := newPostgresEnv(t)
	var failFirst atomic.Bool
	failFirst.Store(true)
	rc := newReceiver(t, "", func(r received, _ int) int {
		if r.PaymentID == "pi_slow" && failFirst.Load() {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	c, err := e.svc.Create(ctx, outbox.NewSubscription{URL: rc.srv.URL}, "ops", "")
	require.NoError(t, err)
	rc.setWebhook(t, c.Secret)
	run(t, e.sender(outbox.SenderOptions{}))
	slow1 := e.capture(ctx, "pi_slow", 1).String()
	slow2 := e.capture(ctx, "pi_slow", 2).String()
	fast1 := e.capture(ctx, "pi_fast", 1).String()
	fast2 := e.capture(ctx, "pi_fast", 2).String()
	eventually(t, "the other stream delivered", func() bool { return len(rc.acked()) == 2 })
	assert.Equal(t, []string{fast1, fast2}, ids(rc.acked()))

	// The other stream's acknowledgements can be written before the slow
	// head's failed attempt (attempts are written in batches): wait for it.
	var sub outbox.Subscription
	eventually(t, "the slow stream's head failed", func() bool {
		sub, err = e.svc.Get(ctx, c.Subscription.ID)
		return err == nil && sub.State == outbox.StateFailing
	})
	assert.Contains(t, sub.LastError, slow1)
	att, err := e.svc.Deliveries(ctx, c.Subscription.ID, outbox.AttemptFilter{Status: "failed"})
	require.NoError(t, err)
	require.NotEmpty(t, att)
	assert.Equal(t, slow1, att[0].EventID.String(), "only the head of the stream is tried")
	assert.Equal(t, http.StatusServiceUnavailable, att[0].Status)

	failFirst.Store(false)
	e.clock.Add(10 * time.Second) // past the first retry (5 s ±20%)
	eventually(t, "the failing stream delivered in order", func() bool { return len(rc.acked()) == 4 })
	assert.Equal(t, []string{fast1, fast2, slow1, slow2}, ids(rc.acked()))
	eventually(t, "active again", func() bool {
		sub, err := e.svc.Get(ctx, c.Subscription.ID)
		return err == nil && sub.State == outbox.StateActive && sub.Pending == 0
	})
}

// The schedule is stored: a sender stopped mid-schedule and a new one
// started goes on from the stored attempt count; after the last attempt
// the subscription is disabled, and enabling it resumes with the event it
// gave up on.
func TestSenderScheduleSurvivesRestartThenDisables(t *testing.T) {
	ctx := testCtx(t)
	e := newPostgresEnv(t)
	var up atomic.Bool
	rc := newReceiver(t, "", func(received, int) int {
		if up.Load() {
			return http.StatusNoContent
		}
		return http.StatusInternalServerError
	})
	c, err := e.svc.Create(ctx, outbox.NewSubscription{URL: rc.srv.URL}, "ops", "")
	require.NoError(t, err)
	rc.setWebhook(t, c.Secret)
	id := c.Subscription.ID
	var disabled atomic.Int64
	mk := func() *outbox.Sender {
		s := e.sender(outbox.SenderOptions{})
		s.Disabled = func(context.Context, uuid.UUID, string, string) { disabled.Add(1) }
		return s
	}
	stop := run(t, mk())
	ev := e.capture(ctx, "pi_x", 1)
	attempts := func() int {
		as, err := e.svc.Deliveries(ctx, id, outbox.AttemptFilter{})
		require.NoError(t, err)
		return len(as)
	}
	eventually(t, "first attempt", func() bool { return attempts() == 1 })
	e.clock.Add(outbox.Schedule[0] * 2)
	eventually(t, "second attempt", func() bool { return attempts() == 2 })
	stop()
	// A new sender (another instance) takes over once the lease is
	// released; the stored schedule says the next attempt is the third.
	stop = run(t, mk())
	for i := 1; i < len(outbox.Schedule); i++ {
		e.clock.Add(outbox.Schedule[i] * 2)
		eventually(t, fmt.Sprintf("attempt %d", i+2), func() bool { return attempts() == i+2 })
	}
	eventually(t, "disabled", func() bool {
		sub, err := e.svc.Get(ctx, id)
		return err == nil && sub.State == outbox.StateDisabled
	})
	assert.Equal(t, int64(1), disabled.Load())
	as, err := e.svc.Deliveries(ctx, id, outbox.AttemptFilter{})
	require.NoError(t, err)
	require.Len(t, as, outbox.MaxAttempts)
	assert.Equal(t, outbox.MaxAttempts, as[0].Attempt)
	for _, a := range as {
		assert.Equal(t, ev, a.EventID)
	}
	e.clock.Add(48 * time.Hour)
	time.Sleep(200 * time.Millisecond)
	assert.Equal(t, outbox.MaxAttempts, attempts(), "a disabled subscription is not tried")

	up.Store(true)
	_, err = e.svc.Enable(ctx, id, "ops", "endpoint fixed")
	require.NoError(t, err)
	eventually(t, "delivered after enable", func() bool { return len(rc.acked()) == 1 })
	assert.Equal(t, ev.String(), rc.acked()[0].ID)
	stop()
}

// Without ONCELEDGER_OUTBOX_ALLOW_PRIVATE, a loopback endpoint is refused
// at connect time (the name resolves to 127.0.0.1): nothing reaches it.
func TestSenderRefusesPrivateAddresses(t *testing.T) {
	ctx := testCtx(t)
	e := newPostgresEnv(t)
	rc := newReceiver(t, "", nil)
	svc := outbox.NewService(e.subs, e.store, outbox.ServiceOptions{Sealer: e.sealer, Now: e.clock.Now})
	_, err := svc.Create(ctx, outbox.NewSubscription{URL: rc.srv.URL}, "ops", "")
	require.ErrorIs(t, err, outbox.ErrInvalid, "an IP literal is refused at once")
	url := strings.Replace(rc.srv.URL, "127.0.0.1", "localtest.onceledger.invalid", 1)
	c, err := svc.Create(ctx, outbox.NewSubscription{URL: url}, "ops", "")
	require.NoError(t, err)
	s := e.sender(outbox.SenderOptions{})
	s.Client = outbox.NewClient(false)
	// A resolver answering loopback for any name: the dial-time check is
	// what refuses it.
	s.Client.Transport.(*http.Transport).DialContext = outbox.DialerFor(false, func(string) string { return rc.srv.Listener.Addr().String() })
	run(t, s)
	e.capture(ctx, "pi_1", 1)
	eventually(t, "an attempt", func() bool {
		as, err := svc.Deliveries(ctx, c.Subscription.ID, outbox.AttemptFilter{})
		return err == nil && len(as) > 0
	})
	as, err := svc.Deliveries(ctx, c.Subscription.ID, outbox.AttemptFilter{})
	require.NoError(t, err)
	assert.Contains(t, as[0].Error, "refused")
	assert.Zero(t, rc.hits.Load())
}

// During a rotation both secrets sign: a receiver that knows only the old
// secret, and one that knows only the new, both verify.
func TestSenderRotationSignsTwice(t *testing.T) {
	ctx := testCtx(t)
	e := newPostgresEnv(t)
	rcOld := newReceiver(t, "", nil)
	c, err := e.svc.Create(ctx, outbox.NewSubscription{URL: rcOld.srv.URL}, "ops", "")
	require.NoError(t, err)
	rcOld.setWebhook(t, c.Secret)
	rot, err := e.svc.RotateSecret(ctx, c.Subscription.ID, "ops", "yearly")
	require.NoError(t, err)
	require.NotEqual(t, c.Secret, rot.Secret)
	run(t, e.sender(outbox.SenderOptions{}))
	e.capture(ctx, "pi_1", 1)
	eventually(t, "old secret verifies", func() bool { return len(rcOld.acked()) == 1 })
	sig := rcOld.acked()[0].Header.Get("webhook-signature")
	assert.Len(t, strings.Fields(sig), 2)
	got := rcOld.acked()[0]
	newWH, err := standardwebhooks.NewWebhook(rot.Secret)
	require.NoError(t, err)
	require.NoError(t, newWH.Verify(got.Body, got.Header), "the new secret verifies too")
}

// A replay resends the same ids, beside live deliveries.
func TestSenderReplaySameIDs(t *testing.T) {
	ctx := testCtx(t)
	e := newPostgresEnv(t)
	rc := newReceiver(t, "", nil)
	c, err := e.svc.Create(ctx, outbox.NewSubscription{URL: rc.srv.URL}, "ops", "")
	require.NoError(t, err)
	rc.setWebhook(t, c.Secret)
	run(t, e.sender(outbox.SenderOptions{}))
	var want []string
	for i := range 4 {
		want = append(want, e.capture(ctx, fmt.Sprintf("pi_%d", i), 1).String())
	}
	eventually(t, "delivered", func() bool { return len(rc.acked()) == 4 })
	_, err = e.svc.Replay(ctx, c.Subscription.ID, outbox.ReplayFrom{After: outbound.Cursor(c.Subscription.Position)}, "ops", "receiver lost its db")
	require.NoError(t, err)
	eventually(t, "replayed", func() bool { return len(rc.acked()) == 8 })
	got := ids(rc.acked())
	assert.ElementsMatch(t, want, got[4:], "the same ids again")
	eventually(t, "replay done", func() bool {
		sub, err := e.svc.Get(ctx, c.Subscription.ID)
		return err == nil && sub.Replay == nil
	})
}

// Secrets are encrypted in the table: the stored bytes do not hold the
// secret, and they open only with the key.
func TestSecretsEncryptedAtRest(t *testing.T) {
	ctx := testCtx(t)
	e := newPostgresEnv(t)
	c, err := e.svc.Create(ctx, outbox.NewSubscription{URL: "https://shop.example/hooks"}, "ops", "")
	require.NoError(t, err)
	var sealed []byte
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT secret FROM subscriptions WHERE id = $1`, c.Subscription.ID).Scan(&sealed))
	assert.NotContains(t, string(sealed), strings.TrimPrefix(c.Secret, "whsec_"))
	opened, err := e.sealer.Open(c.Subscription.ID.String(), sealed)
	require.NoError(t, err)
	assert.Equal(t, c.Secret, opened)
	other, err := outbox.ParseKey(hex.EncodeToString(make([]byte, 32)))
	require.NoError(t, err)
	_, err = other.Open(c.Subscription.ID.String(), sealed)
	require.ErrorIs(t, err, outbox.ErrBadSecretsKey)

	noKey := outbox.NewService(e.subs, e.store, outbox.ServiceOptions{})
	_, err = noKey.Create(ctx, outbox.NewSubscription{URL: "https://shop.example/hooks"}, "ops", "")
	require.ErrorIs(t, err, outbox.ErrNoSecretsKey)
}

// Two senders (two instances) on one subscription: one holds its lease,
// so every event is POSTed exactly once to an endpoint that always
// acknowledges.
func TestTwoSendersOneLease(t *testing.T) {
	ctx := testCtx(t)
	e := newPostgresEnv(t)
	rc := newReceiver(t, "", nil)
	c, err := e.svc.Create(ctx, outbox.NewSubscription{URL: rc.srv.URL}, "ops", "")
	require.NoError(t, err)
	rc.setWebhook(t, c.Secret)
	run(t, e.sender(outbox.SenderOptions{}))
	run(t, e.sender(outbox.SenderOptions{}))
	var want []string
	var wg sync.WaitGroup
	var mu sync.Mutex
	for g := range 8 {
		wg.Go(func() {
			for i := range 5 {
				id := e.capture(ctx, fmt.Sprintf("pi_%d_%d", g, i%2), i)
				mu.Lock()
				want = append(want, id.String())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	eventually(t, "all delivered", func() bool { return len(rc.acked()) >= len(want) })
	time.Sleep(300 * time.Millisecond)
	assert.ElementsMatch(t, want, ids(rc.acked()), "each once")
	assert.EqualValues(t, len(want), rc.hits.Load())
}

// A subscription created while the sender holds another one is served at
// once, not at the sender's next lease renewal (LeaseFor/3, 5 s here): the
// service wakes the sender. Without the wake-up the first events of a new
// subscription waited up to 5 s (bench/run.sh outbound's whole p99).
func TestSenderServesANewSubscriptionAtOnce(t *testing.T) {
	ctx := testCtx(t)
	e := newPostgresEnv(t)
	s := e.sender(outbox.SenderOptions{Poll: time.Second, LeaseFor: 15 * time.Second})
	svc := outbox.NewService(e.subs, e.store, outbox.ServiceOptions{Sealer: e.sealer, AllowPrivate: true, Now: e.clock.Now,
		Changed: s.Wake})
	first := newReceiver(t, "", nil)
	c1, err := svc.Create(ctx, outbox.NewSubscription{URL: first.srv.URL}, "ops", "")
	require.NoError(t, err)
	first.setWebhook(t, c1.Secret)
	run(t, s)
	e.capture(ctx, "pi_first", 1)
	eventually(t, "the first subscription served", func() bool { return len(first.acked()) == 1 })

	second := newReceiver(t, "", nil)
	c2, err := svc.Create(ctx, outbox.NewSubscription{URL: second.srv.URL}, "ops", "")
	require.NoError(t, err)
	second.setWebhook(t, c2.Secret)
	at := time.Now()
	id := e.capture(ctx, "pi_second", 1)
	eventually(t, "the new subscription served", func() bool { return len(second.acked()) == 1 })
	took := time.Since(at)
	assert.Equal(t, id.String(), second.acked()[0].ID)
	assert.Less(t, took, 2*time.Second, "a new subscription waited for the lease renewal")
	t.Logf("first delivery to a new subscription %s after its event", took)
}

// An attempt's latency is the POST's (it was recorded as 0).
func TestSenderRecordsAttemptLatency(t *testing.T) {
	ctx := testCtx(t)
	e := newPostgresEnv(t)
	rc := newReceiver(t, "", func(received, int) int { time.Sleep(40 * time.Millisecond); return http.StatusOK })
	c, err := e.svc.Create(ctx, outbox.NewSubscription{URL: rc.srv.URL}, "ops", "")
	require.NoError(t, err)
	rc.setWebhook(t, c.Secret)
	run(t, e.sender(outbox.SenderOptions{}))
	e.capture(ctx, "pi_slow", 1)
	var as []outbox.Attempt
	eventually(t, "the attempt recorded", func() bool {
		as, err = e.svc.Deliveries(ctx, c.Subscription.ID, outbox.AttemptFilter{})
		return err == nil && len(as) == 1
	})
	assert.GreaterOrEqual(t, as[0].Latency, 40*time.Millisecond)
	assert.Less(t, as[0].Latency, 10*time.Second)
}
