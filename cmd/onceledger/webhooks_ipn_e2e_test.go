package main_test

// PayPal IPN end to end: the listener through the real HTTP server, the
// postback to a loopback verify server this file controls, the verifier
// worker as serve.go wires it, all on a real Postgres database. The incident
// this project exists for: one transaction, three identical IPNs → one fact.

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/domain/payment"
)

// verifyServer stands in for ipnpb.paypal.com: it answers what the test
// sets and keeps every postback's exact bytes.
type verifyServer struct {
	srv    *httptest.Server
	mu     sync.Mutex
	answer string // "VERIFIED", "INVALID", "500" or anything else (sent as is)
	posted [][]byte
}

func newVerifyServer(t *testing.T, answer string) *verifyServer {
	t.Helper()
	v := &verifyServer{answer: answer}
	v.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.Method != http.MethodPost ||
			r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" || r.Header.Get("User-Agent") == "" {
			http.Error(w, "bad postback", http.StatusBadRequest)
			return
		}
		v.mu.Lock()
		v.posted = append(v.posted, body)
		answer := v.answer
		v.mu.Unlock()
		if answer == "500" {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(v.srv.Close)
	return v
}

func (v *verifyServer) set(answer string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.answer = answer
}

func (v *verifyServer) postbacks() [][]byte {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([][]byte(nil), v.posted...)
}

// ipnWorker is the held-delivery verifier of serve's app on s's database,
// posting back to v; base is the first retry's delay (the worker's Interval).
func ipnWorker(s *e2eStack, v *verifyServer, base time.Duration) *ingest.Worker {
	cfg := s.cfg
	cfg.PostbackURL, cfg.PostbackClient = v.srv.URL, v.srv.Client()
	for _, w := range newApp(s.t, cfg).Workers() {
		if w.Status == ingest.StatusUnverified {
			w.Interval = base
			return w
		}
	}
	s.t.Fatal("the app has no verifier of held deliveries")
	return nil
}

func once(t *testing.T, w *ingest.Worker) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := w.Once(ctx)
	require.NoError(t, err)
	return n
}

// postIPN sends body as PayPal does: a form POST.
func (s *e2eStack) postIPN(body []byte) answer {
	req, err := http.NewRequest(http.MethodPost, s.srv.URL+"/webhooks/paypal-ipn", bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return s.do(req)
}

func requireIPNStored(t *testing.T, a answer) {
	t.Helper()
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	require.Empty(t, a.Body, "PayPal wants 200 and an empty body")
}

// ipnPaymentBody is a Completed web_accept IPN in PayPal's field order, with
// bytes a re-encoding would change (%E9 in windows-1252, +, %3A, %40), so
// that only an unchanged postback matches.
func ipnPaymentBody(txn string) []byte {
	return []byte("mc_gross=19.95&protection_eligibility=Eligible&address_status=confirmed&payer_id=LPLWNMTBWMFAY" +
		"&address_street=1+Main+St&payment_date=20%3A12%3A59+Jan+13%2C+2026+PST&payment_status=Completed" +
		"&charset=windows-1252&first_name=Jos%E9&mc_fee=0.88&notify_version=3.9&custom=order-2001" +
		"&business=seller%40onceledger.example&payer_email=buyer%40example.com&txn_id=" + txn +
		"&payment_type=instant&last_name=User&receiver_email=seller%40onceledger.example&txn_type=web_accept" +
		"&item_name=Widget&mc_currency=USD&residence_country=US&test_ipn=1&payment_gross=19.95&ipn_track_id=b5c3d7e2f1a0")
}

// ipnRefundBody refunds 5.00 of parent (PayPal reports it negative).
func ipnRefundBody(txn, parent string) []byte {
	return []byte("mc_gross=-5.00&payment_date=09%3A15%3A02+Jan+15%2C+2026+PST&payment_status=Refunded" +
		"&charset=windows-1252&mc_fee=-0.15&parent_txn_id=" + parent + "&txn_id=" + txn + "&reason_code=refund" +
		"&receiver_email=seller%40onceledger.example&mc_currency=USD&test_ipn=1&ipn_track_id=c1d2e3f4a5b6")
}

// IPN is a channel of provider paypal: its facts post to PayPal's accounts.
var ipnCaptured = map[string]int64{
	"provider:paypal:balance USD": 1995 - 88,
	"expenses:fees:paypal USD":    88,
	"revenue:sales USD":           -1995,
}

// ipnKey is the inbox dedup key of the IPN for txn in payment_status status.
func ipnKey(txn, status string) string { return "ipn:" + txn + ":" + status }

// ipnStream is the payment stream an IPN for txn records to: PayPal's.
func ipnStream(txn string) string { return "payment-paypal-" + txn }

func ipnRow(s *e2eStack, key string) (status string, deliveries int64) {
	s.t.Helper()
	require.NoError(s.t, s.pool.QueryRow(context.Background(),
		`SELECT status, delivery_count FROM webhook_inbox WHERE provider = 'paypal' AND dedup_key = $1`, key).
		Scan(&status, &deliveries))
	return status, deliveries
}

// ipnHasRow: whether the inbox has a row under key (an IPN takes its real
// dedup key only once PayPal verified it).
func ipnHasRow(s *e2eStack, key string) bool {
	s.t.Helper()
	return s.scalar(`SELECT count(*) FROM webhook_inbox WHERE provider = 'paypal' AND dedup_key = $1`, key) == 1
}

// ipnCandidate is the one held candidate of key: identical bytes are one
// candidate (ingest.CandidateKey of key and their payload hash), whatever
// the number of deliveries. It fails unless there is exactly one.
func ipnCandidate(s *e2eStack, key string) (status string, deliveries int64) {
	s.t.Helper()
	var keys []string
	rows, err := s.pool.Query(context.Background(),
		`SELECT dedup_key, status, delivery_count FROM webhook_inbox
		 WHERE provider = 'paypal' AND starts_with(dedup_key, $1)`, key+ingest.CandidateMarker)
	require.NoError(s.t, err)
	defer rows.Close()
	for rows.Next() {
		var k string
		require.NoError(s.t, rows.Scan(&k, &status, &deliveries))
		keys = append(keys, k)
	}
	require.NoError(s.t, rows.Err())
	require.Len(s.t, keys, 1, "one candidate for one message: %v", keys)
	real, ok := ingest.CandidateOf(keys[0])
	require.True(s.t, ok)
	require.Equal(s.t, key, real)
	return status, deliveries
}

// The incident: three identical IPNs for one transaction, one after another.
func TestIPNThreeIdenticalSequential(t *testing.T) {
	s := newProviderStack(t, pgtest.NewDatabase(t))
	v := newVerifyServer(t, "VERIFIED")
	txn := uniq("TXN")
	body := ipnPaymentBody(txn)

	key := ipnKey(txn, "Completed")
	for range 3 {
		requireIPNStored(t, s.postIPN(body))
	}
	// Held: one candidate that counted the three deliveries; the real key is
	// not taken before PayPal confirms the bytes (issue 13).
	status, n := ipnCandidate(s, key)
	assert.Equal(t, ingest.StatusUnverified, status)
	assert.EqualValues(t, 3, n)
	assert.False(t, ipnHasRow(s, key), "the real key waits for PayPal")
	assert.EqualValues(t, 1, s.inboxCount())
	assert.Zero(t, s.eventCount(), "nothing applied before PayPal verified it")

	w := ipnWorker(s, v, time.Second)
	assert.Equal(t, 1, once(t, w))
	assert.Zero(t, once(t, w), "nothing left to verify")

	posted := v.postbacks()
	require.Len(t, posted, 1, "one postback for one message")
	assert.Equal(t, "cmd=_notify-validate&"+string(body), string(posted[0]), "the raw body, unchanged")
	stream := ipnStream(txn)
	assert.Equal(t, []string{payment.TypeCaptured}, s.streamTypes(stream))
	assert.Equal(t, ipnCaptured, s.balances(stream))
	// Promoted: the real key applied, the candidate verified (and still
	// counting the deliveries of those bytes).
	status, _ = ipnRow(s, key)
	assert.Equal(t, ingest.StatusApplied, status)
	status, n = ipnCandidate(s, key)
	assert.Equal(t, ingest.StatusVerified, status)
	assert.EqualValues(t, 3, n)

	// A fourth copy after it was applied: stored answer, nothing new, no
	// second postback.
	requireIPNStored(t, s.postIPN(body))
	assert.Zero(t, once(t, w))
	assert.Equal(t, []string{payment.TypeCaptured}, s.streamTypes(stream))
	status, n = ipnCandidate(s, key)
	assert.Equal(t, ingest.StatusVerified, status)
	assert.EqualValues(t, 4, n)
	assert.EqualValues(t, 2, s.inboxCount(), "the candidate and the real key, nothing else")
	assert.Len(t, v.postbacks(), 1)
	assert.EqualValues(t, 1, s.eventCount())
}

// The incident, concurrently: 3 IPNs × 10 goroutines at once, while three
// verifier instances poll → one candidate counting every delivery, promoted
// once to the real key, one postback, one fact.
func TestIPNThreeIdenticalConcurrent(t *testing.T) {
	s := newProviderStack(t, pgtest.NewDatabase(t))
	v := newVerifyServer(t, "VERIFIED")
	txn := uniq("TXN")
	body := ipnPaymentBody(txn)
	key := ipnKey(txn, "Completed")

	const copies, senders = 3, 10
	answers := make([]answer, copies*senders)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			<-start
			answers[i] = s.postIPN(body)
		})
	}
	// Verifiers racing the deliveries (other instances of the service).
	done := make(chan struct{})
	var workers sync.WaitGroup
	for range 3 {
		w := ipnWorker(s, v, time.Second)
		workers.Go(func() {
			<-start
			// Bounded, but long enough for every delivery to land under
			// load (-race, a busy machine): they stop once the row is applied.
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
				select {
				case <-done:
					return
				default:
				}
				if _, err := w.Once(context.Background()); err != nil {
					t.Errorf("worker: %v", err)
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	close(start)
	wg.Wait()
	require.Eventually(t, func() bool {
		// No row under the real key until a candidate is promoted.
		var status string
		err := s.pool.QueryRow(context.Background(),
			`SELECT status FROM webhook_inbox WHERE provider = 'paypal' AND dedup_key = $1`, key).Scan(&status)
		return err == nil && status == ingest.StatusApplied
	}, 30*time.Second, 20*time.Millisecond)
	close(done)
	workers.Wait()

	for _, a := range answers {
		requireIPNStored(t, a)
	}
	status, n := ipnCandidate(s, key)
	assert.Equal(t, ingest.StatusVerified, status)
	assert.EqualValues(t, copies*senders, n, "every delivery counted on the one candidate")
	_, n = ipnRow(s, key)
	assert.EqualValues(t, 1, n, "promoted once")
	assert.EqualValues(t, 2, s.inboxCount(), "the candidate and the real key, nothing else")
	posted := v.postbacks()
	require.Len(t, posted, 1, "the claim lease lets one verifier post back")
	assert.Equal(t, "cmd=_notify-validate&"+string(body), string(posted[0]))
	stream := ipnStream(txn)
	assert.Equal(t, []string{payment.TypeCaptured}, s.streamTypes(stream))
	assert.Equal(t, ipnCaptured, s.balances(stream))
	assert.EqualValues(t, 1, s.eventCount())
}

// INVALID: kept, marked invalid, never posted, never verified again.
func TestIPNInvalid(t *testing.T) {
	s := newProviderStack(t, pgtest.NewDatabase(t))
	v := newVerifyServer(t, "INVALID")
	txn := uniq("TXN")
	body := ipnPaymentBody(txn)
	requireIPNStored(t, s.postIPN(body))

	key := ipnKey(txn, "Completed")
	w := ipnWorker(s, v, time.Second)
	assert.Equal(t, 1, once(t, w))
	status, _ := ipnCandidate(s, key)
	assert.Equal(t, ingest.StatusInvalid, status)
	assert.False(t, ipnHasRow(s, key), "an INVALID message never takes the real key")

	// PayPal would now say VERIFIED to the same bytes; the stored candidate
	// stays invalid: a redelivery of those bytes is a duplicate of it, and
	// no worker picks it up. (Other bytes would be a candidate of their
	// own: TestForgedIPNCannotPreemptTheGenuineOne.)
	v.set("VERIFIED")
	requireIPNStored(t, s.postIPN(body))
	assert.Zero(t, once(t, ipnWorker(s, v, time.Second)))
	status, n := ipnCandidate(s, key)
	assert.Equal(t, ingest.StatusInvalid, status)
	assert.EqualValues(t, 2, n)
	assert.False(t, ipnHasRow(s, key))
	assert.EqualValues(t, 1, s.inboxCount())
	assert.Len(t, v.postbacks(), 1)
	assert.Zero(t, s.eventCount(), "never posted")
	assert.Equal(t, "cmd=_notify-validate&"+string(body), string(v.postbacks()[0]))
}

// A failing postback is retried with growing delays, the row keeps its
// state across a restart (new server, new pool, new worker on the same
// database), and is applied once when PayPal answers again.
func TestIPNPostbackFailuresRetryAndSurviveRestart(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	s := newProviderStack(t, dbURL)
	v := newVerifyServer(t, "500")
	txn := uniq("TXN")
	key := ipnKey(txn, "Completed")
	body := ipnPaymentBody(txn)
	requireIPNStored(t, s.postIPN(body))

	const base = 300 * time.Millisecond
	w := ipnWorker(s, v, base)
	// delay reads the row's retry schedule: seconds until the next attempt.
	delay := func() (attempts int64, lastError string, wait float64) {
		t.Helper()
		// The held message is its candidate row (the only row of key).
		require.NoError(t, s.pool.QueryRow(context.Background(), `
			SELECT attempts, COALESCE(last_error, ''), EXTRACT(EPOCH FROM next_attempt_at - now())::float8
			FROM webhook_inbox WHERE provider = 'paypal' AND starts_with(dedup_key, $1)`, key+ingest.CandidateMarker).
			Scan(&attempts, &lastError, &wait))
		return attempts, lastError, wait
	}

	assert.Equal(t, 1, once(t, w))
	attempts, lastErr, wait := delay()
	assert.EqualValues(t, 1, attempts)
	assert.Contains(t, lastErr, "status 500")
	assert.Greater(t, wait, 0.0, "next attempt in the future")
	assert.LessOrEqual(t, wait, base.Seconds())
	assert.Zero(t, once(t, w), "not due yet: no hammering")

	// The next attempt, once due, gets garbage: still no verdict, longer wait.
	v.set("<html>Service Unavailable</html>")
	require.Eventually(t, func() bool { return once(t, w) == 1 }, 3*time.Second, 25*time.Millisecond)
	attempts, lastErr, wait = delay()
	assert.EqualValues(t, 2, attempts)
	assert.Contains(t, lastErr, "unexpected answer")
	assert.Greater(t, wait, base.Seconds(), "backoff doubles")
	assert.LessOrEqual(t, wait, 2*base.Seconds())
	status, _ := ipnCandidate(s, key)
	assert.Equal(t, ingest.StatusUnverified, status)
	assert.False(t, ipnHasRow(s, key))
	assert.Zero(t, s.eventCount())
	require.Len(t, v.postbacks(), 2)

	// Restart: everything in memory is gone; PayPal is back.
	s.srv.Close()
	s.pool.Close()
	v.set("VERIFIED")
	restarted := newProviderStack(t, dbURL)
	w2 := ipnWorker(restarted, v, base)
	requireIPNStored(t, restarted.postIPN(body)) // PayPal resent it meanwhile
	require.Eventually(t, func() bool { return once(t, w2) == 1 }, 5*time.Second, 25*time.Millisecond)
	assert.Zero(t, once(t, w2))

	status, _ = ipnRow(restarted, key)
	assert.Equal(t, ingest.StatusApplied, status)
	status, n := ipnCandidate(restarted, key)
	assert.Equal(t, ingest.StatusVerified, status)
	assert.EqualValues(t, 2, n, "the resend counted on the same candidate")
	assert.EqualValues(t, 2, restarted.inboxCount())
	stream := ipnStream(txn)
	assert.Equal(t, []string{payment.TypeCaptured}, restarted.streamTypes(stream))
	assert.Equal(t, ipnCaptured, restarted.balances(stream))
	posted := v.postbacks()
	require.Len(t, posted, 3)
	for _, p := range posted {
		assert.Equal(t, "cmd=_notify-validate&"+string(body), string(p), "every attempt posts the same bytes")
	}
}

// A refund IPN (parent_txn_id) before its payment's IPN: verified, pending,
// then posted once the payment's IPN is verified.
func TestIPNRefundBeforeItsPayment(t *testing.T) {
	s := newProviderStack(t, pgtest.NewDatabase(t))
	v := newVerifyServer(t, "VERIFIED")
	w := ipnWorker(s, v, time.Second)
	txn, refundTxn := uniq("TXN"), uniq("RFD")
	stream := ipnStream(txn)

	refund := ipnRefundBody(refundTxn, txn)
	requireIPNStored(t, s.postIPN(refund))
	assert.Equal(t, 1, once(t, w))
	assert.Equal(t, []string{payment.TypeRefundPending, payment.TypeFlagged}, s.streamTypes(stream))
	assert.Empty(t, s.balances(stream), "a refund of an unknown payment posts nothing yet")

	requireIPNStored(t, s.postIPN(ipnPaymentBody(txn)))
	requireIPNStored(t, s.postIPN(refund)) // PayPal resends the refund too
	assert.Equal(t, 1, once(t, w))
	assert.Equal(t, map[string]int64{
		"provider:paypal:balance USD": 1995 - 88 - 500,
		"expenses:fees:paypal USD":    88,
		"revenue:sales USD":           -1995,
		"revenue:refunds USD":         500,
	}, s.balances(stream))
	count := countTypes(s.streamTypes(stream))
	assert.Equal(t, 1, count[payment.TypeCaptured])
	assert.Equal(t, 1, count[payment.TypeRefundPosted])
	assert.Equal(t, 1, count[payment.TypeCleared])
	assert.Len(t, v.postbacks(), 2)
	assert.Equal(t, "cmd=_notify-validate&"+string(refund), string(v.postbacks()[0]))
}

// An IPN for a receiver that is not ours: 400, nothing stored, nothing
// posted back.
func TestIPNUnknownReceiver(t *testing.T) {
	s := newProviderStack(t, pgtest.NewDatabase(t))
	v := newVerifyServer(t, "VERIFIED")
	body := []byte(strings.Replace(string(ipnPaymentBody(uniq("TXN"))),
		"receiver_email=seller%40onceledger.example", "receiver_email=someone%40elsewhere.example", 1))
	a := s.postIPN(body)
	assert.Equal(t, http.StatusBadRequest, a.Status, a.Body)
	assert.Contains(t, a.Body, "receiver_email")
	assert.Zero(t, s.inboxCount())
	assert.Zero(t, once(t, ipnWorker(s, v, time.Second)))
	assert.Empty(t, v.postbacks())
	assert.Zero(t, s.eventCount())
}
