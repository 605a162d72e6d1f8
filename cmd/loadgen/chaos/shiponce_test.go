package chaos

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
)

// shopRun is TestShipOnce's world: serve (with Stripe and subscriptions),
// the shop's shipper behind its gate, its database, the subscription.
type shopRun struct {
	t        *testing.T
	ctx      context.Context
	start    time.Time
	srv      *server
	admin    string
	shop     *shipper
	gate     *gate
	shopDB   *pgxpool.Pool
	subID    string
	stripe   *stripeSender
	rng      *mrand.Rand
	orders   []*stripeOrder
	captured int // orders whose capture was sent (all of them, by the end)
}

func beginShop(t *testing.T, ctx context.Context) *shopRun {
	t.Helper()
	r := &shopRun{t: t, ctx: ctx, start: time.Now(), admin: "chaos-admin-" + randomHex(t, 8)}
	stripeSecret := "whsec_" + randomHex(t, 16)
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	r.srv = newServer(t, pgtest.UnusedDatabaseURL(t), newSecrets(t), true)
	r.srv.env = []string{
		"ONCELEDGER_STRIPE_SECRETS=" + stripeSecret,
		"ONCELEDGER_ADMIN_TOKENS=chaos=" + r.admin,
		"ONCELEDGER_SECRETS_KEY=" + hex.EncodeToString(key),
		// The shop listens on loopback.
		"ONCELEDGER_OUTBOX_ALLOW_PRIVATE=true",
	}
	r.srv.start()
	shopURL := pgtest.NewEmptyDatabase(t)
	r.shopDB = openPool(t, shopURL)

	// The subscription comes first: its secret is the shipper's
	// configuration. The gate's target is known before the shipper starts.
	r.shop = newShipper(t, shopURL, "")
	var subURL string
	r.gate, subURL = startGate(t, r.shop.addr)
	var created struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	r.adminJSON(http.MethodPost, "/v1/subscriptions", map[string]any{
		"url": subURL, "types": []string{"payment.captured", "refund.succeeded"}, "description": "chaos shop",
	}, &created)
	require.NotEmpty(t, created.ID)
	require.Contains(t, created.Secret, "whsec_")
	r.subID = created.ID
	r.shop.env = append(r.shop.env, "SHIPPER_WEBHOOK_SECRETS="+created.Secret) // the later entry wins
	r.shop.start()

	seed := loggedSeed(t)
	r.rng = mrand.New(mrand.NewPCG(seed, 7))
	r.orders = newStripeOrders(t, r.rng, fmt.Sprintf("%x", seed&0xffffff), 60*scale(t))
	r.stripe = &stripeSender{t: t, url: r.srv.url("/webhooks/stripe"), secret: stripeSecret,
		client: &http.Client{Timeout: 30 * time.Second}}
	return r
}

// adminJSON calls an admin endpoint and decodes a 2xx answer into out.
func (r *shopRun) adminJSON(method, path string, body, out any) {
	r.t.Helper()
	b, err := json.Marshal(body)
	require.NoError(r.t, err)
	req, err := http.NewRequestWithContext(r.ctx, method, r.srv.url(path), bytes.NewReader(b))
	require.NoError(r.t, err)
	req.Header.Set("Authorization", "Bearer "+r.admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(r.t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	require.Equal(r.t, 2, resp.StatusCode/100, "%s %s: %d %s", method, path, resp.StatusCode, raw)
	if out != nil {
		require.NoError(r.t, json.Unmarshal(raw, out), "%s %s: %s", method, path, raw)
	}
}

// sendAsync sends orders in the background; the channel closes when every
// event was acknowledged.
func (r *shopRun) sendAsync(orders []*stripeOrder) <-chan struct{} {
	done := make(chan struct{})
	rng := mrand.New(mrand.NewPCG(r.rng.Uint64(), 1))
	r.captured += len(orders)
	go func() { defer close(done); r.stripe.send(r.ctx, orders, rng) }()
	return done
}

// waitGate waits until cond holds or the context ends.
func (r *shopRun) waitGate(what string, cond func() bool) {
	r.t.Helper()
	require.NoError(r.t, eventually(r.ctx, 2*time.Minute, 5*time.Millisecond, func() error {
		if cond() {
			return nil
		}
		return fmt.Errorf("waiting for %s", what)
	}))
}

// receipts is the shipper's dedup table: webhook-id → row.
type receipt struct {
	typ, paymentID string
	seq            int64
	deliveries     int
}

func (r *shopRun) receipts() map[string]receipt {
	r.t.Helper()
	rows, err := r.shopDB.Query(r.ctx, `SELECT webhook_id, event_type, payment_id, seq, deliveries FROM webhook_receipts`)
	require.NoError(r.t, err)
	defer rows.Close()
	out := map[string]receipt{}
	for rows.Next() {
		var id string
		var rc receipt
		require.NoError(r.t, rows.Scan(&id, &rc.typ, &rc.paymentID, &rc.seq, &rc.deliveries))
		out[id] = rc
	}
	require.NoError(r.t, rows.Err())
	return out
}

// waitAllReceived waits until the shop has a receipt for every capture and
// refund sent.
func (r *shopRun) waitAllReceived(limit time.Duration) map[string]receipt {
	r.t.Helper()
	want := 0
	for _, o := range r.orders[:r.captured] {
		want++
		if o.refunded {
			want++
		}
	}
	var got map[string]receipt
	require.NoError(r.t, eventually(r.ctx, limit, 200*time.Millisecond, func() error {
		if got = r.receipts(); len(got) < want {
			return fmt.Errorf("the shop received %d of %d events", len(got), want)
		}
		return nil
	}))
	return got
}

// TestShipOnce is the "done when": the example consumer
// (docs/examples/shipper), subscribed to onceledger, ships each captured
// payment exactly once through
//
//   - duplicated Stripe webhooks (each capture told by two events, each event
//     sent up to three times, a quarter of them as concurrent twins);
//   - a kill -9 of serve while a delivery is in flight: the shop committed,
//     the answer never reached serve, so the event comes again, same id;
//   - a receiver outage: the shop answers 500 for a while, then is down
//     (connection refused behind its gate), then recovers;
//   - a replay of the subscription from before the first event.
//
// Afterwards: one shipment per order (the shop's UNIQUE key), as many as
// distinct captures; one receipt per captured payment and per refund, under
// the feed's ids; the redeliveries counted under those same ids; and each
// payment's capture received before its refund.
func TestShipOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r := beginShop(t, ctx)
	third := len(r.orders) / 3

	// A kill -9 while the shop's answers are withheld.
	r.gate.mode.Store(gateHold)
	sent := r.sendAsync(r.orders[:third])
	r.waitGate("a delivery in flight", func() bool { return r.gate.held.Load() > 0 })
	r.srv.kill9()
	r.gate.mode.Store(gatePass)
	t.Logf("kill -9 of serve with %d deliveries committed by the shop, unanswered", r.gate.held.Load())
	time.Sleep(200 * time.Millisecond)
	r.srv.start()
	<-sent
	before := r.waitAllReceived(3 * time.Minute)
	redelivered := 0
	for _, rc := range before {
		if rc.deliveries > 1 {
			redelivered++
		}
	}
	assert.Positive(t, redelivered, "the deliveries cut by the kill came again under their ids")

	// The receiver fails for a while (500), then is down, then recovers:
	// each within the first retry's 5 s, so that a failed delivery's
	// retry finds the shop up again (a second failure waits 5 minutes).
	r.gate.mode.Store(gateFail)
	half := third + third/2
	sent = r.sendAsync(r.orders[third:half])
	r.waitGate("a 500", func() bool { return r.gate.failed.Load() > 0 })
	r.gate.mode.Store(gatePass)
	r.shop.kill9()
	sentDown := r.sendAsync(r.orders[half : 2*third])
	r.waitGate("a delivery to the shop while it is down", func() bool { return r.gate.down.Load() > 0 })
	r.shop.start()
	t.Logf("outage: %d answered 500, %d found the shop down", r.gate.failed.Load(), r.gate.down.Load())
	<-sent
	<-sentDown
	<-r.sendAsync(r.orders[2*third:])
	r.stripe.report(t)
	received := r.waitAllReceived(5 * time.Minute)

	// A replay from before the first event resends everything, same ids.
	r.adminJSON(http.MethodPost, "/v1/subscriptions/"+r.subID+"/replay",
		map[string]any{"from_time": r.start.Add(-time.Minute).UTC().Format(time.RFC3339)}, nil)
	require.NoError(t, eventually(ctx, 3*time.Minute, 200*time.Millisecond, func() error {
		now := r.receipts()
		for id, rc := range received {
			if now[id].deliveries <= rc.deliveries {
				return fmt.Errorf("%s not replayed yet", id)
			}
		}
		if len(now) != len(received) {
			return fmt.Errorf("the replay brought %d new ids", len(now)-len(received))
		}
		return nil
	}))
	r.checkShippedOnce(r.receipts())
}

// checkShippedOnce compares the shop's tables with the orders and the feed.
func (r *shopRun) checkShippedOnce(got map[string]receipt) {
	t := r.t
	t.Helper()
	var shipments, orders int
	require.NoError(t, r.shopDB.QueryRow(r.ctx, `SELECT count(*), count(DISTINCT payment_id) FROM shipments`).Scan(&shipments, &orders))
	assert.Equal(t, len(r.orders), shipments, "one shipment per distinct capture")
	assert.Equal(t, len(r.orders), orders)

	// The receipts are the feed's events of those types, each once.
	feed := readFeed(r.ctx, t, r.srv, "payment.captured", "refund.succeeded")
	byPayment := map[string]map[string]int64{} // payment → type → receipt seq
	sum := 0
	for _, e := range feed {
		rc, ok := got[e.ID]
		if !assert.Truef(t, ok, "feed event %s (%s of %s) never reached the shop", e.ID, e.Type, e.PaymentID) {
			continue
		}
		assert.Equal(t, e.Type, rc.typ)
		assert.Equal(t, e.PaymentID, rc.paymentID)
		assert.Greaterf(t, rc.deliveries, 1, "%s: the replay came under the same id", e.ID)
		sum += rc.deliveries
		if byPayment[e.PaymentID] == nil {
			byPayment[e.PaymentID] = map[string]int64{}
		}
		_, twice := byPayment[e.PaymentID][e.Type]
		assert.Falsef(t, twice, "payment %s has two %s events", e.PaymentID, e.Type)
		byPayment[e.PaymentID][e.Type] = rc.seq
	}
	assert.Len(t, got, len(feed), "the shop received only the feed's ids")
	refunds := 0
	for _, o := range r.orders {
		seqs := byPayment[o.pi]
		_, captured := seqs["payment.captured"]
		assert.Truef(t, captured, "order %s: no payment.captured", o.pi)
		if o.refunded {
			refunds++
			// Per-payment order: the refund was sent only once the capture
			// was acknowledged, so the shop committed the capture first.
			assert.Lessf(t, seqs["payment.captured"], seqs["refund.succeeded"], "order %s: refund received before capture", o.pi)
		}
	}
	assert.Len(t, feed, len(r.orders)+refunds)
	t.Logf("%d orders, %d refunds: %d shipments; the shop received %d deliveries of %d events",
		len(r.orders), refunds, shipments, sum, len(feed))
}
