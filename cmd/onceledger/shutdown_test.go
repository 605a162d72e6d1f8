package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/providers/standard"
	"github.com/onceledger/onceledger/domain/payment"
)

// Load and timing bounds of the shutdown test.
const (
	loadWorkers       = 32
	maxPerWorker      = 2000             // deliveries per worker, at most
	ackedBeforeSignal = 150              // SIGTERM once this many deliveries were acknowledged
	shutdownTimeout   = 15 * time.Second // ONCELEDGER_SHUTDOWN_TIMEOUT of the server
	exitSlack         = 5 * time.Second  // closing the pool and projectors after the drain
	loadDeadline      = 90 * time.Second // whole load phase, whatever happens
)

func startServer(t *testing.T, bin, dbURL, secret string) *server {
	t.Helper()
	addr := freeLoopbackAddr(t)
	return startServeWithEnv(t, bin, addr, serveEnv(
		"ONCELEDGER_DATABASE_URL="+dbURL,
		"ONCELEDGER_ADDR="+addr,
		"ONCELEDGER_STANDARD_SECRETS="+secret,
		"ONCELEDGER_SHUTDOWN_TIMEOUT="+shutdownTimeout.String(),
		"ONCELEDGER_INGEST_TIMEOUT=10s",
		"ONCELEDGER_LOG_LEVEL=info",
	))
}

// delivery is one signed Standard Webhooks capture.
type delivery struct {
	msgID, paymentID string
	body             []byte
}

func newDelivery(worker, i int) delivery {
	pay := fmt.Sprintf("pay_%d_%d", worker, i)
	return delivery{
		msgID:     fmt.Sprintf("msg_%d_%d", worker, i),
		paymentID: pay,
		body: fmt.Appendf(nil, `{"type":"payment.captured","timestamp":"2026-11-29T10:00:00Z",`+
			`"data":{"payment_id":%q,"capture_id":"cap_1","amount":1000,"currency":"USD","fee":30}}`, pay),
	}
}

// outcome of one POST: the status code, or a transport error.
type outcome struct {
	d           delivery
	status      int
	err         error
	afterSignal bool // answered after SIGTERM was sent
}

func TestServeGracefulShutdownUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary against Postgres")
	}
	dbURL := pgtest.NewDatabase(t)
	bin := buildBinary(t)
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("onceledger-shutdown-test-key-32b"))
	srv := startServer(t, bin, dbURL, secret)
	srv.waitHealthy(t)

	l := &shutdownLoad{srv: srv, secret: secret, client: &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: loadWorkers, MaxConnsPerHost: loadWorkers},
	}}
	t.Cleanup(l.client.CloseIdleConnections)
	var stopLoad context.CancelFunc
	l.ctx, stopLoad = context.WithTimeout(context.Background(), loadDeadline)
	defer stopLoad()

	var wg sync.WaitGroup
	for w := 0; w < loadWorkers; w++ {
		wg.Go(func() { l.work(w) })
	}
	signalAt := l.signalMidLoad()
	require.False(t, signalAt.IsZero(), "never reached %d acknowledged deliveries before the load deadline", ackedBeforeSignal)

	wg.Wait()
	select {
	case <-srv.exited:
	case <-time.After(shutdownTimeout + exitSlack):
		t.Fatalf("server still running %v after SIGTERM", time.Since(signalAt))
	}
	exitedAfter := time.Since(signalAt)
	require.NoError(t, srv.err, "server exit")
	require.Equal(t, 0, srv.cmd.ProcessState.ExitCode())
	require.Less(t, exitedAfter, shutdownTimeout+exitSlack)

	ackedSet := l.requireOnlyAcksAndRefusals(t, exitedAfter)
	requireRecorded(t, dbURL, ackedSet)
}

// shutdownLoad is the load of the shutdown test: workers sending signed
// captures until the server stops accepting, and what each got.
type shutdownLoad struct {
	srv    *server
	secret string
	client *http.Client
	ctx    context.Context // the whole load phase

	acked    atomic.Int64 // 2xx answers, redeliveries included
	signaled atomic.Bool  // SIGTERM was sent
	mu       sync.Mutex
	outcomes []outcome
}

// send posts one signed delivery.
func (l *shutdownLoad) send(d delivery) outcome {
	req, err := http.NewRequestWithContext(l.ctx, http.MethodPost, l.srv.base+"/webhooks/standard", bytes.NewReader(d.body))
	if err != nil {
		return outcome{d: d, err: err}
	}
	h, err := standard.Sign(l.secret, d.msgID, time.Now(), d.body)
	if err != nil {
		return outcome{d: d, err: err}
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := l.client.Do(req)
	o := outcome{d: d, err: err}
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		o.status = resp.StatusCode
	}
	o.afterSignal = l.signaled.Load()
	return o
}

// work is worker w: it sends its deliveries until the port closes (or a
// transport error before SIGTERM, which the assertions report).
func (l *shutdownLoad) work(w int) {
	var prev *delivery
	for i := 0; i < maxPerWorker && l.ctx.Err() == nil; i++ {
		d := newDelivery(w, i)
		// Every fifth request redelivers the previous one: an
		// acknowledged duplicate must be on record just the same.
		if i%5 == 4 && prev != nil {
			d = *prev
		}
		o := l.send(d)
		l.mu.Lock()
		l.outcomes = append(l.outcomes, o)
		l.mu.Unlock()
		if o.err == nil && o.status/100 == 2 {
			l.acked.Add(1)
		}
		prev = &d
		// The port is closed: the server stopped accepting.
		if errors.Is(o.err, syscall.ECONNREFUSED) {
			return
		}
		if o.err != nil && !l.signaled.Load() {
			// Before SIGTERM, transport errors are not expected;
			// stop this worker, the assertions report it.
			return
		}
	}
}

// signalMidLoad sends SIGTERM once the server has acknowledged a fair
// number of deliveries, and returns when (zero: the load deadline came
// first).
func (l *shutdownLoad) signalMidLoad() time.Time {
	for l.acked.Load() < ackedBeforeSignal && l.ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	if l.ctx.Err() != nil {
		return time.Time{}
	}
	signalAt := time.Now()
	l.signaled.Store(true)
	_ = l.srv.cmd.Process.Signal(syscall.SIGTERM)
	return signalAt
}

// requireOnlyAcksAndRefusals classifies the answers: 2xx, 503 or a closed
// port, no transport error before SIGTERM. It returns the distinct
// acknowledged deliveries.
func (l *shutdownLoad) requireOnlyAcksAndRefusals(t *testing.T, exitedAfter time.Duration) map[string]delivery {
	var (
		ackedSet               = map[string]delivery{}
		refused, otherErr      int
		unavailable, afterSig  int
		preSignalErrs, badCode []string
	)
	for _, o := range l.outcomes {
		if o.afterSignal {
			afterSig++
		}
		switch {
		case o.err != nil && errors.Is(o.err, syscall.ECONNREFUSED):
			refused++
		case o.err != nil:
			otherErr++
			if !o.afterSignal {
				preSignalErrs = append(preSignalErrs, o.err.Error())
			}
		case o.status/100 == 2:
			ackedSet[o.d.msgID] = o.d
		case o.status == http.StatusServiceUnavailable:
			unavailable++
		default:
			// A 5xx other than 503 breaks the contract; a 4xx means a
			// valid signed delivery was refused.
			badCode = append(badCode, fmt.Sprintf("%s: %d", o.d.msgID, o.status))
		}
	}
	t.Logf("requests %d: acknowledged %d distinct, 503 %d, refused %d, other transport errors %d; answered after SIGTERM %d; exit %v after SIGTERM",
		len(l.outcomes), len(ackedSet), unavailable, refused, otherErr, afterSig, exitedAfter.Round(time.Millisecond))
	require.Empty(t, badCode, "answers other than 2xx or 503")
	require.Empty(t, preSignalErrs, "transport errors before SIGTERM")
	require.Positive(t, refused, "load stopped before the port closed")
	// acked counts every 2xx, the redeliveries included; ackedSet only the
	// distinct deliveries, which can be fewer than the SIGTERM threshold.
	require.GreaterOrEqual(t, l.acked.Load(), int64(ackedBeforeSignal), "the load ran before SIGTERM")
	return ackedSet
}

// requireRecorded: every acknowledged delivery is on record, applied,
// with its event.
func requireRecorded(t *testing.T, dbURL string, ackedSet map[string]delivery) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer pool.Close()
	var missing []string
	for _, d := range ackedSet {
		var status string
		err := pool.QueryRow(ctx, `SELECT status FROM webhook_inbox WHERE provider = 'standard' AND dedup_key = $1`, d.msgID).Scan(&status)
		if err != nil {
			missing = append(missing, fmt.Sprintf("%s: inbox: %v", d.msgID, err))
			continue
		}
		if status != "applied" {
			missing = append(missing, fmt.Sprintf("%s: inbox status %s", d.msgID, status))
		}
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE event_id = $1 AND stream_id = $2`,
			payment.EventID("standard", d.msgID, 0), "payment-standard-"+d.paymentID).Scan(&n))
		if n != 1 {
			missing = append(missing, fmt.Sprintf("%s: %d events", d.msgID, n))
		}
	}
	require.Empty(t, missing, "acknowledged deliveries not durably recorded")
}
