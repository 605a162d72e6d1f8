package main_test

// Forged IPN messages (issue 13): anyone who knows a txn_id can post an IPN
// for it before PayPal does. Through the real HTTP server, the app's
// verifier worker and a loopback postback server that confirms only the
// genuine bytes, on a real Postgres database.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/paypalipn"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
)

// judge stands in for PayPal's postback endpoint: VERIFIED for the bytes
// PayPal sent (registered with genuine), INVALID for anything else.
type judge struct {
	srv     *httptest.Server
	mu      sync.Mutex
	genuine map[string]bool
	asked   int
}

func newJudge(t *testing.T) *judge {
	j := &judge{genuine: map[string]bool{}}
	j.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		msg, ok := bytes.CutPrefix(body, []byte("cmd=_notify-validate&"))
		j.mu.Lock()
		defer j.mu.Unlock()
		j.asked++
		if ok && j.genuine[string(msg)] {
			_, _ = io.WriteString(w, "VERIFIED")
			return
		}
		_, _ = io.WriteString(w, "INVALID")
	}))
	t.Cleanup(j.srv.Close)
	return j
}

func (j *judge) sent(msg []byte) []byte {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.genuine[string(msg)] = true
	return msg
}

func (j *judge) postbacks() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.asked
}

type ipnApp struct {
	t        *testing.T
	srv      *httptest.Server
	pool     *pgxpool.Pool
	store    eventstore.Store
	verifier *ingest.Worker
}

func newIPNApp(t *testing.T, j *judge) *ipnApp {
	t.Helper()
	ipn, err := paypalipn.New([]string{ipnReceiver})
	require.NoError(t, err)
	a := newApp(t, app.Config{
		DatabaseURL:    pgtest.NewDatabase(t),
		Providers:      map[string]providers.Adapter{paypalipn.Name: ipn},
		Logger:         testLogger(),
		IngestTimeout:  5 * time.Second,
		PostbackURL:    j.srv.URL,
		PostbackClient: j.srv.Client(),
	})
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	s := &ipnApp{t: t, srv: srv, pool: a.Pool(), store: a.Events().Store}
	for _, w := range a.Workers() {
		if w.Status == ingest.StatusUnverified {
			s.verifier = w
		}
	}
	require.NotNil(t, s.verifier, "the app verifies held deliveries")
	return s
}

func (s *ipnApp) post(body []byte) {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.srv.URL+"/webhooks/paypal-ipn", bytes.NewReader(body))
	require.NoError(s.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	a := doRequest(s.srv, req)
	require.Equal(s.t, http.StatusOK, a.Status, a.Body)
	require.Empty(s.t, a.Body)
}

// verifyAll runs the verifier until no row is due.
func (s *ipnApp) verifyAll() {
	s.t.Helper()
	for range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		n, err := s.verifier.Once(ctx)
		cancel()
		require.NoError(s.t, err)
		if n == 0 {
			return
		}
	}
	s.t.Fatal("the verifier never ran out of rows")
}

func (s *ipnApp) statuses(key string) map[string]int64 {
	s.t.Helper()
	out := map[string]int64{}
	rows, err := s.pool.Query(context.Background(), `
		SELECT status, count(*) FROM webhook_inbox
		WHERE provider = 'paypal' AND (dedup_key = $1 OR starts_with(dedup_key, $1 || '|'))
		GROUP BY status`, key)
	require.NoError(s.t, err)
	defer rows.Close()
	for rows.Next() {
		var st string
		var n int64
		require.NoError(s.t, rows.Scan(&st, &n))
		out[st] = n
	}
	require.NoError(s.t, rows.Err())
	return out
}

var genuineCapture = map[string]int64{
	"provider:paypal:balance USD": 1995 - 88,
	"expenses:fees:paypal USD":    88,
	"revenue:sales USD":           -1995,
}

// forgedIPN is ipnPaymentBody(txn) with another amount (and n to make each
// forgery's bytes its own).
func forgedIPN(txn string, n int) []byte {
	b := strings.Replace(string(ipnPaymentBody(txn)), "mc_gross=19.95", "mc_gross=1.00", 1)
	return []byte(strings.Replace(b, "custom=order-2001", fmt.Sprintf("custom=forged-%d", n), 1))
}

func TestForgedIPNCannotPreemptTheGenuineOne(t *testing.T) {
	for _, order := range []string{"forged-then-genuine", "genuine-then-forged"} {
		t.Run(order, func(t *testing.T) {
			j := newJudge(t)
			s := newIPNApp(t, j)
			txn := strings.ToUpper(uniq("9TX"))[:17]
			genuine, forged := j.sent(ipnPaymentBody(txn)), forgedIPN(txn, 1)
			if order == "forged-then-genuine" {
				s.post(forged)
				s.post(genuine)
			} else {
				s.post(genuine)
				s.post(forged)
			}
			s.post(genuine) // PayPal's resend: the same bytes, one candidate
			s.verifyAll()

			stream := "payment-paypal-" + txn
			assert.Equal(t, genuineCapture, streamBalances(t, s.store, stream), "the genuine capture, once")
			assert.Equal(t, []string{"payment.captured"}, streamTypes(t, s.store, stream))
			key := "ipn:" + txn + ":Completed"
			assert.Equal(t, map[string]int64{"applied": 1, "verified": 1, "invalid": 1}, s.statuses(key))
			// Running the verifier again changes nothing.
			s.verifyAll()
			assert.Equal(t, genuineCapture, streamBalances(t, s.store, stream))
		})
	}
}

// TestForgedIPNFloodIsBoundedAndDoesNotDelayTheGenuineOne: twenty forgeries
// for one txn_id queue at most four candidates (the rest are posted back
// inline and dropped); the genuine message, arriving behind them, is
// verified inline and booked before its 200, with no worker run.
func TestForgedIPNFloodIsBoundedAndDoesNotDelayTheGenuineOne(t *testing.T) {
	j := newJudge(t)
	s := newIPNApp(t, j)
	txn := strings.ToUpper(uniq("8TX"))[:17]
	for i := range 20 {
		s.post(forgedIPN(txn, i))
	}
	key := "ipn:" + txn + ":Completed"
	assert.Equal(t, map[string]int64{"unverified": 4}, s.statuses(key), "at most four candidates wait per txn_id")

	s.post(j.sent(ipnPaymentBody(txn)))
	stream := "payment-paypal-" + txn
	assert.Equal(t, genuineCapture, streamBalances(t, s.store, stream), "booked before its 200, behind the flood")
	assert.Equal(t, 17, j.postbacks(), "16 forgeries and the genuine message were posted back inline")

	s.verifyAll()
	assert.Equal(t, map[string]int64{"applied": 1, "invalid": 4}, s.statuses(key))
	assert.Equal(t, genuineCapture, streamBalances(t, s.store, stream))
	assert.Equal(t, []string{"payment.captured"}, streamTypes(t, s.store, stream))
}
