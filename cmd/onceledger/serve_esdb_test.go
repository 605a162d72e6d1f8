package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/esdb"
	"github.com/onceledger/onceledger/adapters/esdb/esdbfake"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/providers/standard"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections"
)

// esdbServeEnv is the configuration of `onceledger serve` (and of the
// status and inspect commands run beside it) with the events in
// EventStoreDB: only this test's ONCELEDGER_* settings.
func esdbServeEnv(dbURL, eventStore, addr, secret, token string) []string {
	return serveEnv(
		"ONCELEDGER_DATABASE_URL="+dbURL,
		"ONCELEDGER_EVENT_STORE="+eventStore,
		"ONCELEDGER_ADDR="+addr,
		"ONCELEDGER_STANDARD_SECRETS="+secret,
		"ONCELEDGER_API_TOKENS="+token,
		"ONCELEDGER_INGEST_TIMEOUT=5s",
		"ONCELEDGER_SHUTDOWN_TIMEOUT=10s",
		"ONCELEDGER_LOG_LEVEL=info",
	)
}

// esdbE2E is the running server, its fake EventStoreDB node and what the
// test needs to talk to both.
type esdbE2E struct {
	t      *testing.T
	srv    *server
	fake   *esdbfake.Server
	store  *esdb.Store // the test's own view of the node
	pool   *pgxpool.Pool
	client *http.Client
	secret string
	token  string
}

// post sends a signed Standard Webhooks delivery and returns the status
// code and the "status" field of the answer (accepted, duplicate, …).
func (e *esdbE2E) post(msgID string, body []byte) (int, string) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.srv.base+"/webhooks/standard", bytes.NewReader(body))
	require.NoError(e.t, err)
	h, err := standard.Sign(e.secret, msgID, time.Now(), body)
	require.NoError(e.t, err)
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	require.NoError(e.t, err, "POST %s", msgID)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var answer struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(raw, &answer)
	return resp.StatusCode, answer.Status
}

// get fetches an API path with the bearer token into out (when not nil) and
// returns the status code.
func (e *esdbE2E) get(path string, out any) int {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.srv.base+path, nil)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := e.client.Do(req)
	require.NoError(e.t, err, "GET %s", path)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	if out != nil && resp.StatusCode == http.StatusOK {
		require.NoError(e.t, json.Unmarshal(raw, out), "GET %s: %s", path, raw)
	}
	return resp.StatusCode
}

// readyz is /readyz's status code.
func (e *esdbE2E) readyz() int {
	e.t.Helper()
	resp, err := e.client.Get(e.srv.base + "/readyz")
	require.NoError(e.t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// waitReadyz polls /readyz until it answers want (bounded).
func (e *esdbE2E) waitReadyz(want int, within time.Duration) {
	e.t.Helper()
	deadline := time.Now().Add(within)
	last := 0
	for time.Now().Before(deadline) {
		if last = e.readyz(); last == want {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.t.Fatalf("/readyz still %d after %v, want %d", last, within, want)
}

// balances is /v1/balances as "account currency" → balance, zeros left out.
func (e *esdbE2E) balances() map[string]int64 {
	e.t.Helper()
	var body struct {
		Balances []struct {
			Account  string `json:"account"`
			Currency string `json:"currency"`
			Balance  int64  `json:"balance"`
		} `json:"balances"`
	}
	require.Equal(e.t, http.StatusOK, e.get("/v1/balances", &body))
	out := map[string]int64{}
	for _, b := range body.Balances {
		if b.Balance != 0 {
			out[b.Account+" "+b.Currency] = b.Balance
		}
	}
	return out
}

// waitBalances polls /v1/balances until it equals want. /v1/projections'
// lag counts the Postgres events table, which is empty with EventStoreDB,
// so the balances themselves are the sign that the projectors caught up.
func (e *esdbE2E) waitBalances(want map[string]int64) {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var got map[string]int64
	for time.Now().Before(deadline) {
		if got = e.balances(); fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.t.Fatalf("balances did not reach the expectation within a minute:\n got %v\nwant %v", got, want)
}

// cli runs another command of the binary with the server's configuration.
func (e *esdbE2E) cli(env []string, args ...string) (string, string, error) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.srv.cmd.Path, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// stream reads a stream from the node.
func (e *esdbE2E) stream(name string) []eventstore.RecordedEvent {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evs, err := e.store.ReadStream(ctx, name)
	require.NoError(e.t, err, "read %s", name)
	return evs
}

func (e *esdbE2E) inboxStatus(msgID string) string {
	e.t.Helper()
	var s string
	require.NoError(e.t, e.pool.QueryRow(context.Background(),
		`SELECT status FROM webhook_inbox WHERE provider = 'standard' AND dedup_key = $1`, msgID).Scan(&s), msgID)
	return s
}

func standardWebhook(typ string, data map[string]any) []byte {
	b, err := json.Marshal(map[string]any{"type": typ, "timestamp": "2026-11-29T10:00:00Z", "data": data})
	if err != nil {
		panic(err)
	}
	return b
}

func typesOf(evs []eventstore.RecordedEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// TestServeWithEventStoreDB runs the whole server with its events in
// EventStoreDB (the in-process fake node) and its inbox and read models in
// Postgres: signed deliveries with duplicates and a refund before its
// capture reach the balances, the query API, status and inspect; the node
// goes down (503s, not ready) and comes back on the same address, where a
// redelivery and the sweeper finish what the outage left "received", once.
func TestServeWithEventStoreDB(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary against Postgres")
	}
	fake := esdbfake.Start(t)
	nodeAddr := fake.Addr()
	dbURL := pgtest.NewDatabase(t)
	bin := buildBinary(t)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store, err := esdb.Dial(fake.URL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })

	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("onceledger-esdb-serve-test-key32"))
	token := "esdb-test-token"
	addr := freeLoopbackAddr(t)
	env := esdbServeEnv(dbURL, fake.URL(), addr, secret, token)
	e := &esdbE2E{
		t: t, fake: fake, store: store, pool: pool, secret: secret, token: token,
		client: &http.Client{Timeout: 30 * time.Second},
		srv:    startServeWithEnv(t, bin, addr, env),
	}
	t.Cleanup(e.client.CloseIdleConnections)
	e.srv.waitHealthy(t)
	e.waitReadyz(http.StatusOK, 30*time.Second)

	want := e.sendTheStory()
	e.waitBalances(want)
	streamB := e.paymentReadFromTheNode()
	head := e.checkpointsAtTheHead(ctx)
	e.statusAndInspect(env, head, streamB)

	eventsBefore := e.nodeDownAndBack(nodeAddr)
	e.outageLeftoversAppliedOnce(ctx, eventsBefore)
	want["provider:standard:balance USD"] += 1400
	want["revenue:sales USD"] -= 1400
	e.waitBalances(want)
	var received int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM webhook_inbox WHERE status = 'received'`).Scan(&received))
	assert.Zero(t, received, "rows left received")

	out, stderr, err := e.cli(env, "verify")
	require.NoError(t, err, "verify: %s%s", out, stderr)

	// A clean stop.
	require.NoError(t, e.srv.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-e.srv.exited:
		require.NoError(t, e.srv.err, "server exit")
	case <-time.After(30 * time.Second):
		t.Fatal("server still running 30s after SIGTERM")
	}
}

// esdbCapture is a Standard Webhooks capture.
func esdbCapture(pay, capID string, amount, fee int64, cur string) []byte {
	return standardWebhook("payment.captured", map[string]any{"payment_id": pay, "capture_id": capID, "amount": amount, "fee": fee, "currency": cur})
}

// sendTheStory sends signed deliveries, with duplicates and a refund
// before its capture, checks each answer, and returns the balances they
// must give.
func (e *esdbE2E) sendTheStory() map[string]int64 {
	t := e.t
	refundB := standardWebhook("refund.succeeded", map[string]any{"payment_id": "pay_B", "refund_id": "re_B", "amount": 400, "currency": "USD"})
	sends := []struct {
		msgID string
		body  []byte
		want  string
	}{
		{"msg_a1", esdbCapture("pay_A", "cap_A", 10000, 300, "USD"), "accepted"},
		{"msg_a1", esdbCapture("pay_A", "cap_A", 10000, 300, "USD"), "duplicate"},
		{"msg_b1", refundB, "accepted"}, // before its capture
		{"msg_b2", esdbCapture("pay_B", "cap_B", 1000, 0, "USD"), "accepted"},
		{"msg_b1", refundB, "duplicate"},
		{"msg_c1", esdbCapture("pay_C", "cap_C", 5000, 150, "EUR"), "accepted"},
		{"msg_c2", standardWebhook("dispute.opened", map[string]any{"payment_id": "pay_C", "dispute_id": "dp_C", "amount": 5000, "currency": "EUR"}), "accepted"},
		{"msg_c3", standardWebhook("dispute.lost", map[string]any{"payment_id": "pay_C", "dispute_id": "dp_C", "amount": 5000, "currency": "EUR"}), "accepted"},
		{"msg_p1", standardWebhook("payout.paid", map[string]any{"payout_id": "po_1", "amount": 2000, "currency": "USD"}), "accepted"},
		// The same capture under another message id: one fact.
		{"msg_a2", esdbCapture("pay_A", "cap_A", 10000, 300, "USD"), "accepted"},
	}
	for _, s := range sends {
		code, outcome := e.post(s.msgID, s.body)
		require.Equal(t, http.StatusOK, code, s.msgID)
		require.Equal(t, s.want, outcome, s.msgID)
	}

	// The expectation, from the chart of accounts of docs/reference.md
	// (zeros left out): A captures 100.00 with a 3.00 fee; B's refund of
	// 4.00 waits for its capture of 10.00; C captures 50.00 EUR (fee 1.50)
	// and loses a dispute of 50.00; a payout of 20.00 leaves for the bank.
	return map[string]int64{
		"provider:standard:balance USD": 10000 - 300 + 1000 - 400 - 2000,
		"expenses:fees:standard USD":    300,
		"revenue:sales USD":             -10000 - 1000,
		"revenue:refunds USD":           400,
		"bank:payouts USD":              2000,
		"provider:standard:balance EUR": 5000 - 150 - 5000,
		"expenses:fees:standard EUR":    150,
		"revenue:sales EUR":             -5000,
		"expenses:disputes EUR":         5000,
	}
}

// paymentReadFromTheNode: the query API's payment has its events from
// EventStoreDB, in order; it returns pay_B's stream as the node has it.
func (e *esdbE2E) paymentReadFromTheNode() []eventstore.RecordedEvent {
	t := e.t
	var payB struct {
		StreamID string `json:"stream_id"`
		Amounts  struct {
			Captured int64 `json:"captured"`
			Refunded int64 `json:"refunded"`
		} `json:"amounts"`
		Version uint64 `json:"version"`
		Events  []struct {
			Version uint64 `json:"version"`
			Type    string `json:"type"`
		} `json:"events"`
	}
	require.Equal(t, http.StatusOK, e.get("/v1/payments/standard/pay_B", &payB))
	streamB := e.stream("payment-standard-pay_B")
	require.NotEmpty(t, streamB)
	assert.Equal(t, "payment-standard-pay_B", payB.StreamID)
	assert.Equal(t, int64(1000), payB.Amounts.Captured)
	assert.Equal(t, int64(400), payB.Amounts.Refunded)
	assert.Equal(t, streamB[len(streamB)-1].Version, payB.Version)
	require.Len(t, payB.Events, len(streamB))
	for i, ev := range streamB {
		assert.Equal(t, ev.Version, payB.Events[i].Version)
		assert.Equal(t, ev.Type, payB.Events[i].Type)
	}
	assert.Contains(t, typesOf(streamB), payment.TypeRefundPosted)
	assert.Contains(t, typesOf(streamB), payment.TypeCleared)
	require.Len(t, e.stream("payment-standard-pay_A"), 1, "one capture, reported twice")
	return streamB
}

// checkpointsAtTheHead waits for every projection to be live at the
// node's head, and returns it.
func (e *esdbE2E) checkpointsAtTheHead(ctx context.Context) eventstore.Position {
	t := e.t
	head, err := e.store.Head(ctx)
	require.NoError(t, err)
	var projs struct {
		Projections []struct {
			Name           string `json:"name"`
			Position       uint64 `json:"position"`
			PositionCommit uint64 `json:"position_commit"`
			Status         string `json:"status"`
		} `json:"projections"`
	}
	require.Eventually(t, func() bool {
		require.Equal(t, http.StatusOK, e.get("/v1/projections", &projs))
		at := 0
		for _, p := range projs.Projections {
			if p.Position == head.Prepare && p.PositionCommit == head.Commit && p.Status == "live" {
				at++
			}
		}
		n := len(projections.Default())
		return at == n && len(projs.Projections) == n
	}, 30*time.Second, 100*time.Millisecond, "projections at the head %s", head)
	return head
}

// statusAndInspect runs status and inspect as commands with the server's
// configuration env: the projections at head, the inbox applied, pay_B's
// events as streamB, an unknown stream an error.
func (e *esdbE2E) statusAndInspect(env []string, head eventstore.Position, streamB []eventstore.RecordedEvent) {
	t := e.t
	out, stderr, err := e.cli(env, "status", "--json")
	require.NoError(t, err, "status: %s", stderr)
	var st statusView
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	assert.Equal(t, head.Prepare, st.Head)
	assert.Equal(t, head.Commit, st.HeadCommit)
	require.Len(t, st.Projections, len(projections.Default()))
	for _, p := range st.Projections {
		assert.Equal(t, int64(0), p.Lag, p.Name)
		assert.Equal(t, head, p.Position, p.Name)
		assert.True(t, p.Active, "%s is run by the server", p.Name)
	}
	assert.Equal(t, int64(8), st.Inbox["applied"], "inbox: %v", st.Inbox)
	assert.Equal(t, int64(0), st.Inbox["received"], "inbox: %v", st.Inbox)

	out, stderr, err = e.cli(env, "inspect", "--json", "payment-standard-pay_B")
	require.NoError(t, err, "inspect: %s", stderr)
	var inspected []struct {
		Version uint64 `json:"version"`
		Type    string `json:"type"`
		EventID string `json:"event_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &inspected), out)
	require.Len(t, inspected, len(streamB))
	for i, ev := range streamB {
		assert.Equal(t, ev.Type, inspected[i].Type)
		assert.Equal(t, ev.ID.String(), inspected[i].EventID)
	}
	out, _, err = e.cli(env, "inspect", "payment-standard-pay_C")
	require.NoError(t, err)
	assert.Contains(t, out, "stream payment-standard-pay_C: 3 events")
	assert.Contains(t, out, payment.TypeDisputeLost)
	_, _, err = e.cli(env, "inspect", "payment-standard-nope")
	require.Error(t, err, "an unknown stream exits non-zero")
}

// nodeDownAndBack stops the node: the inbox takes the deliveries, the
// appends cannot happen, the provider is told to retry, and the server is
// not ready. Then the node comes back on the same address (nodeAddr) with
// its log; it returns the node's event count then.
func (e *esdbE2E) nodeDownAndBack(nodeAddr string) int {
	t := e.t
	e.fake.Stop()
	for _, msg := range []string{"msg_d1", "msg_e1"} {
		code, _ := e.post(msg, esdbCapture(strings.Replace(msg, "msg_", "pay_", 1), "cap_"+msg, 700, 0, "USD"))
		require.Equal(t, http.StatusServiceUnavailable, code, "%s while the node is down", msg)
		assert.Equal(t, "received", e.inboxStatus(msg), "%s is on record, not applied", msg)
	}
	e.waitReadyz(http.StatusServiceUnavailable, 15*time.Second)
	code, _ := e.post("msg_e1", esdbCapture("pay_e1", "cap_msg_e1", 700, 0, "USD"))
	require.Equal(t, http.StatusServiceUnavailable, code, "a redelivery while the node is down")

	require.NoError(t, e.fake.Start(nodeAddr))
	e.waitReadyz(http.StatusOK, 60*time.Second)
	return e.fake.EventCount()
}

// outageLeftoversAppliedOnce: the provider's retry of msg_d1 drives its
// row and is applied once; msg_e1, never redelivered, is the sweeper's.
// The node gains one event per delivery the outage left over (it had
// eventsBefore).
func (e *esdbE2E) outageLeftoversAppliedOnce(ctx context.Context, eventsBefore int) {
	t := e.t
	code, outcome := e.post("msg_d1", esdbCapture("pay_d1", "cap_msg_d1", 700, 0, "USD"))
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "duplicate", outcome, "the first arrival is on record")
	assert.Equal(t, "applied", e.inboxStatus("msg_d1"))
	assert.Equal(t, []string{payment.TypeCaptured}, typesOf(e.stream("payment-standard-pay_d1")))
	code, _ = e.post("msg_d1", esdbCapture("pay_d1", "cap_msg_d1", 700, 0, "USD"))
	require.Equal(t, http.StatusOK, code)
	assert.Len(t, e.stream("payment-standard-pay_d1"), 1)

	// The sweeper's: its age is what makes it so (serve sweeps rows
	// received over 30 s ago and has no flag for that), so the row is made
	// a minute old instead of waiting; the sweeper polls every 5 s.
	_, err := e.pool.Exec(ctx, `UPDATE webhook_inbox SET first_seen_at = now() - interval '1 minute'
		WHERE provider = 'standard' AND dedup_key = 'msg_e1'`)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return e.inboxStatus("msg_e1") == "applied" },
		30*time.Second, 100*time.Millisecond, "the sweeper did not apply msg_e1")
	assert.Equal(t, []string{payment.TypeCaptured}, typesOf(e.stream("payment-standard-pay_e1")))
	assert.Equal(t, eventsBefore+2, e.fake.EventCount(), "one event per delivery left over by the outage")
}
