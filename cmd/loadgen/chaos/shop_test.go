package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/cmd/loadgen/internal/sign"
)

// The shop of TestShipOnce: the example consumer docs/examples/shipper run
// as a process over a database of its own, behind a gate that can make it
// fail, hold its answers, or look down, and the Stripe deliveries that tell
// the shop's payments.

var (
	shipperOnce sync.Once
	shipperPath string
	shipperErr  error
)

// shipperBinary builds docs/examples/shipper once per run.
func shipperBinary(t *testing.T) string {
	t.Helper()
	shipperOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		out := filepath.Join(binDir, "shipper")
		cmd := exec.Command(goBin, "build", "-o", out, "github.com/onceledger/onceledger/docs/examples/shipper")
		if msg, err := cmd.CombinedOutput(); err != nil {
			shipperErr = fmt.Errorf("go build ./docs/examples/shipper: %v\n%s", err, msg)
			return
		}
		shipperPath = out
	})
	require.NoError(t, shipperErr)
	return shipperPath
}

// shipper is the example consumer's process, restartable on one address.
type shipper struct {
	t       *testing.T
	addr    string
	env     []string
	logPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func newShipper(t *testing.T, dbURL, secret string) *shipper {
	t.Helper()
	s := &shipper{t: t, addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), logPath: filepath.Join(t.TempDir(), "shipper.log")}
	s.env = append(withoutOnceledgerEnv(os.Environ()),
		"SHIPPER_ADDR="+s.addr, "SHIPPER_DATABASE_URL="+dbURL, "SHIPPER_WEBHOOK_SECRETS="+secret)
	t.Cleanup(func() {
		s.kill9()
		if t.Failed() {
			t.Logf("last lines of the shipper log:\n%s", tail(s.logPath, 20))
		}
	})
	return s
}

// start runs the shipper and waits until it accepts connections.
func (s *shipper) start() {
	s.t.Helper()
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(s.t, err)
	cmd := exec.Command(shipperBinary(s.t))
	cmd.Env, cmd.Stdout, cmd.Stderr = s.env, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(s.t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case <-done:
			require.Fail(s.t, "the shipper exited", tail(s.logPath, 20))
		default:
		}
		if c, err := net.DialTimeout("tcp", s.addr, time.Second); err == nil {
			c.Close()
			return
		}
		require.True(s.t, time.Now().Before(deadline), "the shipper is not listening after 30s")
	}
}

func (s *shipper) kill9() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
	s.cmd, s.done = nil, nil
}

// Gate modes.
const (
	gatePass = iota // forward to the shipper, answer what it answers
	gateFail        // answer 500 without forwarding: the shop's service is broken
	gateHold        // forward, then keep the answer until the caller goes away or the mode changes
)

// gate stands in front of the shipper, at the URL subscribed: the shop's
// load balancer, which the test turns into an outage.
type gate struct {
	target string
	client *http.Client
	mode   atomic.Int32
	held   atomic.Int32 // answers withheld (the shipper had committed)
	failed atomic.Int32 // 500s answered in gateFail
	down   atomic.Int32 // requests that found the shipper down (502)
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.mode.Load() == gateFail {
		g.failed.Add(1)
		http.Error(w, "the shop is broken for a while", http.StatusInternalServerError)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, "http://"+g.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header = r.Header.Clone()
	resp, err := g.client.Do(req)
	if err != nil {
		g.down.Add(1)
		http.Error(w, "the shop is down", http.StatusBadGateway)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if g.mode.Load() == gateHold {
		g.held.Add(1)
		for g.mode.Load() == gateHold && r.Context().Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
	}
	w.WriteHeader(resp.StatusCode)
}

// startGate serves a gate to the shipper on a loopback port; it returns the
// URL to subscribe.
func startGate(t *testing.T, target string) (*gate, string) {
	t.Helper()
	g := &gate{target: target, client: &http.Client{Timeout: 15 * time.Second}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := &http.Server{Handler: g, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(l) }()
	t.Cleanup(func() { _ = hs.Close() })
	return g, "http://" + l.Addr().String() + "/onceledger"
}

// stripeDelivery is one Stripe event, redelivered with the same bytes.
type stripeDelivery struct {
	id   string
	body []byte
}

// stripeOrder is one shop order paid by a card PaymentIntent with automatic
// capture: the capture is told twice (charge.succeeded and
// payment_intent.succeeded, two event ids, one charge), and half the orders
// get a refund afterwards.
type stripeOrder struct {
	pi, currency string
	amount       int64
	refunded     bool
	events       []stripeDelivery // in the order Stripe sends them
}

func stripeEnvelope(t *testing.T, id, typ string, created int64, object map[string]any) stripeDelivery {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"id": id, "object": "event", "api_version": "2025-08-27.basil", "created": created,
		"livemode": false, "pending_webhooks": 1, "type": typ,
		"request": map[string]any{"id": nil, "idempotency_key": nil},
		"data":    map[string]any{"object": object},
	})
	require.NoError(t, err)
	return stripeDelivery{id: id, body: b}
}

// newStripeOrders generates n orders of run.
func newStripeOrders(t *testing.T, rng *rand.Rand, run string, n int) []*stripeOrder {
	t.Helper()
	created := time.Now().Add(-time.Hour).Unix()
	var out []*stripeOrder
	for i := range n {
		o := &stripeOrder{pi: fmt.Sprintf("pi_%s_%04d", run, i), currency: "usd", amount: 500 + rng.Int64N(50_000), refunded: i%2 == 0}
		ch, txn := "ch_"+o.pi[3:], "txn_"+o.pi[3:]
		fee := o.amount*29/1000 + 30
		charge := map[string]any{
			"id": ch, "object": "charge", "amount": o.amount, "amount_captured": o.amount, "amount_refunded": 0,
			"balance_transaction": map[string]any{"id": txn, "object": "balance_transaction", "amount": o.amount,
				"currency": o.currency, "fee": fee, "net": o.amount - fee, "reporting_category": "charge",
				"status": "pending", "type": "charge",
				"fee_details": []any{map[string]any{"amount": fee, "currency": o.currency, "type": "stripe_fee"}}},
			"captured": true, "created": created, "currency": o.currency, "paid": true,
			"payment_intent": o.pi, "refunded": false, "status": "succeeded",
		}
		intent := map[string]any{
			"id": o.pi, "object": "payment_intent", "amount": o.amount, "amount_received": o.amount, "amount_capturable": 0,
			"currency": o.currency, "capture_method": "automatic", "created": created, "latest_charge": charge,
			"status": "succeeded", "payment_method_types": []string{"card"},
		}
		o.events = append(o.events,
			stripeEnvelope(t, "evt_c_"+o.pi[3:], "charge.succeeded", created, charge),
			stripeEnvelope(t, "evt_p_"+o.pi[3:], "payment_intent.succeeded", created, intent))
		if o.refunded {
			o.events = append(o.events, stripeEnvelope(t, "evt_r_"+o.pi[3:], "refund.created", created+60, map[string]any{
				"id": "re_" + o.pi[3:], "object": "refund", "amount": o.amount / 2, "charge": ch, "currency": o.currency,
				"payment_intent": o.pi, "reason": "requested_by_customer", "status": "succeeded", "created": created + 60}))
		}
		out = append(out, o)
	}
	return out
}

// stripeSender delivers Stripe events as Stripe does: signed at each
// attempt, retried until a 2xx, some sent more than once and some as two
// copies at the same instant.
type stripeSender struct {
	t       *testing.T
	url     string
	secret  string
	client  *http.Client
	posts   atomic.Int64
	refused atomic.Int64 // transport errors and 503s: serve down or restarting

	mu         sync.Mutex
	violations []string
}

// post sends d once and reports acknowledgement.
func (s *stripeSender) post(ctx context.Context, d stripeDelivery) bool {
	s.posts.Add(1)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(d.body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", sign.Stripe(s.secret, time.Now(), d.body))
	resp, err := s.client.Do(req)
	if err != nil {
		s.refused.Add(1)
		return false
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
		return true
	case resp.StatusCode == http.StatusServiceUnavailable:
		s.refused.Add(1)
	default:
		s.mu.Lock()
		s.violations = append(s.violations, fmt.Sprintf("%s: %d %s", d.id, resp.StatusCode, strings.TrimSpace(string(b))))
		s.mu.Unlock()
	}
	return false
}

// deliver posts d until acknowledged, once more per extra, the first
// attempt as concurrent twins when twin.
func (s *stripeSender) deliver(ctx context.Context, d stripeDelivery, extra int, twin bool) {
	acked := false
	if twin {
		var wg sync.WaitGroup
		var other atomic.Bool
		wg.Go(func() { other.Store(s.post(ctx, d)) })
		acked = s.post(ctx, d)
		wg.Wait()
		acked = acked || other.Load()
	}
	for try := 1; !acked && ctx.Err() == nil; try++ {
		if acked = s.post(ctx, d); !acked {
			time.Sleep(time.Duration(min(try, 20)) * 50 * time.Millisecond)
		}
	}
	for range extra {
		s.post(ctx, d)
	}
}

// send delivers the orders from workers goroutines, each order's events in
// order, with duplicates and twins chosen by rng.
func (s *stripeSender) send(ctx context.Context, orders []*stripeOrder, rng *rand.Rand) {
	type job struct {
		o      *stripeOrder
		extras []int
		twins  []bool
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				for i, d := range j.o.events {
					s.deliver(ctx, d, j.extras[i], j.twins[i])
				}
			}
		})
	}
	for _, o := range orders {
		j := job{o: o}
		for range o.events {
			j.extras = append(j.extras, rng.IntN(3))
			j.twins = append(j.twins, rng.IntN(4) == 0)
		}
		jobs <- j
	}
	close(jobs)
	wg.Wait()
}

func (s *stripeSender) report(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Logf("stripe: %d posts, %d refused while serve was down", s.posts.Load(), s.refused.Load())
	require.Empty(t, s.violations, "unexpected answers to Stripe deliveries")
}
