package main_test

// The duplicate-delivery matrix of the ingestion issue: one test per row,
// each through the real HTTP server against a real Postgres database.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/domain/payment"
)

func captureBody(paymentID, captureID string, amount, fee int64) []byte {
	return standardBody("payment.captured", map[string]any{
		"payment_id": paymentID, "capture_id": captureID, "amount": amount, "currency": "USD", "fee": fee,
	})
}

func TestSameEventDeliveredTwice(t *testing.T) { eachStore(t, testSameEventDeliveredTwice) }

func testSameEventDeliveredTwice(t *testing.T, s *stack) {
	pay, id := uniq("pay"), uniq("msg")
	body := captureBody(pay, "cap_1", 1000, 30)

	first := s.sendStandard(id, body)
	require.Equal(t, http.StatusOK, first.Status, first.Body)
	assert.Equal(t, "accepted", first.outcome(t))
	second := s.sendStandard(id, body)
	require.Equal(t, http.StatusOK, second.Status, second.Body)
	assert.Equal(t, "duplicate", second.outcome(t))

	assert.Equal(t, []string{payment.TypeCaptured}, s.streamTypes("payment-standard-"+pay))
	assert.Equal(t, map[string]int64{
		"provider:standard:balance USD": 970,
		"expenses:fees:standard USD":    30,
		"revenue:sales USD":             -1000,
	}, s.balances("payment-standard-"+pay))
	assert.EqualValues(t, 2, s.scalar(`SELECT delivery_count FROM webhook_inbox WHERE dedup_key = $1`, id))
}

func TestFiftyIdenticalDeliveriesAtTheSameMoment(t *testing.T) {
	eachStore(t, testFiftyIdenticalDeliveriesAtTheSameMoment)
}

func testFiftyIdenticalDeliveriesAtTheSameMoment(t *testing.T, s *stack) {
	pay, id := uniq("pay"), uniq("msg")
	body := captureBody(pay, "cap_1", 2500, 0)
	header := standardDelivery(t, id, body, time.Now())

	const n = 50
	start := make(chan struct{})
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[i] = s.post("/webhooks/standard", header, body)
		}()
	}
	close(start)
	wg.Wait()

	outcomes := map[string]int{}
	for _, a := range answers {
		require.Equal(t, http.StatusOK, a.Status, "no 5xx for a duplicate: %s", a.Body)
		outcomes[a.outcome(t)]++
	}
	assert.Equal(t, map[string]int{"accepted": 1, "duplicate": n - 1}, outcomes)
	assert.Equal(t, []string{payment.TypeCaptured}, s.streamTypes("payment-standard-"+pay))
	assert.EqualValues(t, n, s.scalar(`SELECT delivery_count FROM webhook_inbox WHERE dedup_key = $1`, id))
}

func TestRestartSameEventStillDuplicate(t *testing.T) {
	eachStore(t, testRestartSameEventStillDuplicate)
}

func testRestartSameEventStillDuplicate(t *testing.T, s *stack) {
	pay, id := uniq("pay"), uniq("msg")
	body := captureBody(pay, "cap_1", 700, 0)
	require.Equal(t, "accepted", s.sendStandard(id, body).outcome(t))
	restarted := s.restart()
	again := restarted.sendStandard(id, body)
	require.Equal(t, http.StatusOK, again.Status, again.Body)
	assert.Equal(t, "duplicate", again.outcome(t))
	assert.Equal(t, []string{payment.TypeCaptured}, restarted.streamTypes("payment-standard-"+pay))
}

func TestMissingEventIDConstraintHolds(t *testing.T) { eachStore(t, testMissingEventIDConstraintHolds) }

func testMissingEventIDConstraintHolds(t *testing.T, s *stack) {
	pay := uniq("pay")

	// Stripe: the event id is required.
	noID := []byte(fmt.Sprintf(`{"type":"charge.succeeded","created":%d,"data":{"object":{"id":"ch_1","object":"charge","payment_intent":%q,"amount":100,"amount_captured":100,"captured":true,"currency":"usd"}}}`, time.Now().Unix(), pay))
	a := s.sendStripe(noID)
	assert.Equal(t, http.StatusBadRequest, a.Status, a.Body)
	assert.Contains(t, a.Body, "id")
	emptyID := bytes.Replace(noID, []byte(`{"type"`), []byte(`{"id":"","type"`), 1)
	a = s.sendStripe(emptyID)
	assert.Equal(t, http.StatusBadRequest, a.Status, a.Body)

	// Standard Webhooks: webhook-id is part of the signed content and the
	// key; without it the delivery cannot be verified at all.
	body := captureBody(pay, "cap_1", 100, 0)
	a = s.sendStandard("", body)
	assert.Equal(t, http.StatusUnauthorized, a.Status, a.Body)
	assert.Contains(t, a.Body, "webhook-id")
	assert.Zero(t, s.inboxCount())
	assert.Zero(t, s.eventCount())

	// And the table itself refuses NULL or empty keys, whatever the code does.
	ctx := context.Background()
	for _, key := range []any{nil, ""} {
		_, err := s.pool.Exec(ctx, `INSERT INTO webhook_inbox (provider, dedup_key, payload_hash, raw_body, status)
			VALUES ('standard', $1, 'h', '\x00', 'received')`, key)
		require.Error(t, err, "dedup key %v must be refused", key)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO webhook_inbox (provider, dedup_key, payload_hash, raw_body, status)
		VALUES ('', 'k', 'h', '\x00', 'received')`)
	require.Error(t, err, "empty provider must be refused")
}

func TestRefundArrivesBeforeItsPayment(t *testing.T) { eachStore(t, testRefundArrivesBeforeItsPayment) }

func testRefundArrivesBeforeItsPayment(t *testing.T, s *stack) {
	pay := uniq("pay")
	stream := "payment-standard-" + pay
	refund := standardBody("refund.succeeded", map[string]any{"payment_id": pay, "refund_id": "re_1", "amount": 400, "currency": "USD"})

	require.Equal(t, "accepted", s.sendStandard(uniq("msg"), refund).outcome(t))
	assert.Empty(t, s.balances(stream), "a refund of an unknown payment posts nothing yet")
	assert.Equal(t, []string{payment.TypeRefundPending, payment.TypeFlagged}, s.streamTypes(stream))

	require.Equal(t, "accepted", s.sendStandard(uniq("msg"), captureBody(pay, "cap_1", 1000, 0)).outcome(t))
	assert.Equal(t, map[string]int64{
		"provider:standard:balance USD": 600,
		"revenue:sales USD":             -1000,
		"revenue:refunds USD":           400,
	}, s.balances(stream))
	types := s.streamTypes(stream)
	assert.Contains(t, types, payment.TypeRefundPosted)
	assert.Contains(t, types, payment.TypeCleared)

	// The refund's own retry changes nothing.
	require.Equal(t, "accepted", s.sendStandard(uniq("msg"), refund).outcome(t))
	assert.Equal(t, int64(600), s.balances(stream)["provider:standard:balance USD"])
}

func TestProviderRetryWithSameEventID(t *testing.T) { eachStore(t, testProviderRetryWithSameEventID) }

func testProviderRetryWithSameEventID(t *testing.T, s *stack) {
	pay := uniq("pay")
	evt := uniq("evt")
	body := []byte(fmt.Sprintf(`{"id":%q,"object":"event","type":"charge.succeeded","created":%d,"data":{"object":{"id":"ch_retry","object":"charge","payment_intent":%q,"amount":5000,"amount_captured":5000,"captured":true,"currency":"eur"}}}`, evt, time.Now().Unix(), pay))
	require.Equal(t, "accepted", s.sendStripe(body).outcome(t))
	before := s.eventCount()
	for range 3 {
		a := s.sendStripe(body) // a fresh signature each time, as Stripe's retries have
		require.Equal(t, http.StatusOK, a.Status, a.Body)
		assert.Equal(t, "duplicate", a.outcome(t))
	}
	assert.Equal(t, before, s.eventCount(), "business logic skipped")
	assert.Equal(t, int64(5000), s.balances("payment-stripe-" + pay)["provider:stripe:balance EUR"])
}

func TestOneCaptureReportedByTwoEventTypesAndTwoEventIDs(t *testing.T) {
	eachStore(t, testOneCaptureReportedByTwoEventTypesAndTwoEventIDs)
}

func testOneCaptureReportedByTwoEventTypesAndTwoEventIDs(t *testing.T, s *stack) {
	pi := uniq("pi")
	now := time.Now().Unix()
	charge := []byte(fmt.Sprintf(`{"id":%q,"object":"event","type":"charge.succeeded","created":%d,"data":{"object":{"id":"ch_one","object":"charge","payment_intent":%q,"amount":1999,"amount_captured":1999,"captured":true,"currency":"usd"}}}`, uniq("evt"), now, pi))
	intent := []byte(fmt.Sprintf(`{"id":%q,"object":"event","type":"payment_intent.succeeded","created":%d,"data":{"object":{"id":%q,"object":"payment_intent","amount":1999,"amount_received":1999,"currency":"usd","latest_charge":"ch_one","status":"succeeded"}}}`, uniq("evt"), now, pi))

	require.Equal(t, "accepted", s.sendStripe(intent).outcome(t))
	require.Equal(t, "accepted", s.sendStripe(charge).outcome(t))
	assert.Equal(t, []string{payment.TypeCaptured}, s.streamTypes("payment-stripe-"+pi))
	assert.Equal(t, map[string]int64{"provider:stripe:balance USD": 1999, "revenue:sales USD": -1999}, s.balances("payment-stripe-"+pi))
}

func TestTwentyDifferentEventsForOnePaymentAtOnce(t *testing.T) {
	eachStore(t, testTwentyDifferentEventsForOnePaymentAtOnce)
}

func testTwentyDifferentEventsForOnePaymentAtOnce(t *testing.T, s *stack) {
	pay := uniq("pay")
	stream := "payment-standard-" + pay
	// 10 captures of 1,000 (fee 10), 8 refunds of 100, 2 disputes of 50
	// opened: 20 different deliveries, all at once.
	var bodies [][]byte
	for i := range 10 {
		bodies = append(bodies, captureBody(pay, fmt.Sprintf("cap_%d", i), 1000, 10))
	}
	for i := range 8 {
		bodies = append(bodies, standardBody("refund.succeeded", map[string]any{"payment_id": pay, "refund_id": fmt.Sprintf("re_%d", i), "amount": 100, "currency": "USD"}))
	}
	for i := range 2 {
		bodies = append(bodies, standardBody("dispute.opened", map[string]any{"payment_id": pay, "dispute_id": fmt.Sprintf("dp_%d", i), "amount": 50, "currency": "USD"}))
	}
	start := make(chan struct{})
	answers := make([]answer, len(bodies))
	var wg sync.WaitGroup
	for i, b := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := uniq("msg")
			h := standardDelivery(t, id, b, time.Now())
			<-start
			answers[i] = s.post("/webhooks/standard", h, b)
		}()
	}
	close(start)
	wg.Wait()
	for _, a := range answers {
		require.Equal(t, http.StatusOK, a.Status, a.Body)
		require.Equal(t, "accepted", a.outcome(t))
	}
	// A refund that raced ahead of every capture is pending first and posted
	// with the first capture; the totals do not depend on the order.
	assert.Equal(t, map[string]int64{
		"provider:standard:balance USD":    10*990 - 8*100 - 2*50,
		"expenses:fees:standard USD":       100,
		"revenue:sales USD":                -10000,
		"revenue:refunds USD":              800,
		"receivable:disputes:standard USD": 100,
	}, s.balances(stream))
	types := s.streamTypes(stream) // asserts contiguous versions
	count := map[string]int{}
	for _, ty := range types {
		count[ty]++
	}
	assert.Equal(t, 10, count[payment.TypeCaptured])
	assert.Equal(t, 8, count[payment.TypeRefundPosted])
	// A dispute that raced ahead of every capture is recorded pending and
	// posts its withdrawal with the first capture (dispute.funds_withdrawn);
	// one that came after a capture is dispute.opened. Either way, once.
	assert.Equal(t, 2, count[payment.TypeDisputeOpened]+count[payment.TypeDisputeFundsWithdrawn])
}

func TestSameIDDifferentPayload(t *testing.T) { eachStore(t, testSameIDDifferentPayload) }

func testSameIDDifferentPayload(t *testing.T, s *stack) {
	pay, id := uniq("pay"), uniq("msg")
	stream := "payment-standard-" + pay
	require.Equal(t, "accepted", s.sendStandard(id, captureBody(pay, "cap_1", 1000, 0)).outcome(t))

	changed := captureBody(pay, "cap_1", 9000, 0)
	for range 2 {
		a := s.sendStandard(id, changed)
		require.Equal(t, http.StatusOK, a.Status, a.Body)
		assert.Equal(t, "duplicate", a.outcome(t))
	}
	assert.Equal(t, map[string]int64{"provider:standard:balance USD": 1000, "revenue:sales USD": -1000}, s.balances(stream),
		"the changed payload is not applied")
	assert.Equal(t, []string{payment.TypeCaptured, payment.TypeFlagged}, s.streamTypes(stream),
		"the conflict is recorded once for reconciliation")
	evs, err := s.store.ReadStream(context.Background(), stream)
	require.NoError(t, err)
	var flag struct {
		Kind string `json:"kind"`
	}
	require.NoError(t, json.Unmarshal(evs[1].Data, &flag))
	assert.Equal(t, payment.ReconConflictingRedelivery, flag.Kind)
	assert.EqualValues(t, 2, s.scalar(`SELECT conflict_count FROM webhook_inbox WHERE dedup_key = $1`, id))
	assert.EqualValues(t, 1, s.scalar(`SELECT count(*) FROM webhook_conflicts WHERE dedup_key = $1`, id))
}

func TestBadSignatureStaleTimestampOversizeMalformed(t *testing.T) {
	eachStore(t, testBadSignatureStaleTimestampOversizeMalformed)
}

func testBadSignatureStaleTimestampOversizeMalformed(t *testing.T, s *stack) {
	pay := uniq("pay")
	body := captureBody(pay, "cap_1", 1000, 0)

	t.Run("bad signature", func(t *testing.T) {
		h := standardDelivery(t, uniq("msg"), body, time.Now())
		tampered := bytes.Replace(body, []byte("1000"), []byte("9999"), 1)
		a := s.post("/webhooks/standard", h, tampered)
		assert.Equal(t, http.StatusUnauthorized, a.Status, a.Body)
		assert.Contains(t, a.Body, "error")
		st := stripeDelivery(body, time.Now())
		st.Set("Stripe-Signature", strings.Replace(st.Get("Stripe-Signature"), "v1=", "v1=00", 1))
		assert.Equal(t, http.StatusUnauthorized, s.post("/webhooks/stripe", st, body).Status)
	})
	t.Run("stale timestamp", func(t *testing.T) {
		old := time.Now().Add(-10 * time.Minute)
		a := s.post("/webhooks/standard", standardDelivery(t, uniq("msg"), body, old), body)
		assert.Equal(t, http.StatusUnauthorized, a.Status, a.Body)
		stripeBody := []byte(fmt.Sprintf(`{"id":%q,"type":"charge.succeeded","created":1,"data":{"object":{}}}`, uniq("evt")))
		assert.Equal(t, http.StatusUnauthorized, s.post("/webhooks/stripe", stripeDelivery(stripeBody, old), stripeBody).Status)
	})
	t.Run("body over the limit", func(t *testing.T) {
		big := standardBody("payment.captured", map[string]any{"payment_id": pay, "capture_id": "c", "amount": 1, "currency": "USD", "pad": strings.Repeat("x", maxBody)})
		a := s.post("/webhooks/standard", standardDelivery(t, uniq("msg"), big, time.Now()), big)
		assert.Equal(t, http.StatusRequestEntityTooLarge, a.Status, a.Body)
	})
	t.Run("malformed JSON", func(t *testing.T) {
		bad := []byte(`{"type":"payment.captured","data":{`)
		a := s.post("/webhooks/standard", standardDelivery(t, uniq("msg"), bad, time.Now()), bad)
		assert.Equal(t, http.StatusBadRequest, a.Status, a.Body)
		assert.Contains(t, a.Body, "error")
	})
	t.Run("unknown provider", func(t *testing.T) {
		assert.Equal(t, http.StatusNotFound, s.post("/webhooks/nope", nil, body).Status)
		assert.Equal(t, http.StatusNotFound, s.post("/webhooks/adyen", nil, body).Status, "unconfigured")
	})
	assert.Zero(t, s.inboxCount(), "nothing stored")
	assert.Zero(t, s.eventCount(), "nothing stored")
}

func TestDatabaseUnavailable(t *testing.T) { eachStore(t, testDatabaseUnavailable) }

func testDatabaseUnavailable(t *testing.T, s *stack) {
	pay, id := uniq("pay"), uniq("msg")
	body := captureBody(pay, "cap_1", 1234, 0)
	dbName := s.scalarText(`SELECT current_database()`)

	admin := s.adminPool()
	ctx := context.Background()
	_, err := admin.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %q WITH ALLOW_CONNECTIONS false`, dbName))
	require.NoError(t, err)
	_, err = admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, dbName)
	require.NoError(t, err)

	for range 3 {
		a := s.sendStandard(id, body)
		assert.Equal(t, http.StatusServiceUnavailable, a.Status, "database down: 503, never 2xx or 500: %s", a.Body)
	}

	_, err = admin.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %q WITH ALLOW_CONNECTIONS true`, dbName))
	require.NoError(t, err)
	var a answer
	require.Eventually(t, func() bool {
		a = s.sendStandard(id, body)
		return a.Status == http.StatusOK
	}, 10*time.Second, 100*time.Millisecond)
	assert.Equal(t, "accepted", a.outcome(t), "the redelivery after recovery is the first recorded arrival")
	assert.Equal(t, "duplicate", s.sendStandard(id, body).outcome(t))
	assert.Equal(t, []string{payment.TypeCaptured}, s.streamTypes("payment-standard-"+pay))
}

// TestProviderConcurrencyCap: a burst from one provider beyond its cap is
// refused with 503 and Retry-After (so the provider retries later) instead
// of queueing on the pool, and another provider is not affected.
func TestProviderConcurrencyCap(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	s := startCappedStack(t, dbURL, 1)
	pay, id := uniq("pay"), uniq("msg")
	body := captureBody(pay, "cap_1", 100, 0)

	// Hold the inbox row's key in an open transaction: the first delivery
	// waits on the primary key, occupying the provider's only slot.
	ctx := context.Background()
	blocker, err := s.pool.Begin(ctx)
	require.NoError(t, err)
	defer blocker.Rollback(ctx)
	_, err = blocker.Exec(ctx, `INSERT INTO webhook_inbox (provider, dedup_key, payload_hash, raw_body, status)
		VALUES ('standard', $1, 'held', '\x00', 'received')`, id)
	require.NoError(t, err)

	first := make(chan answer, 1)
	go func() { first <- s.sendStandard(id, body) }()
	require.Eventually(t, func() bool {
		return s.scalar(`SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
			WHERE a.datname = current_database() AND NOT l.granted`) > 0
	}, 5*time.Second, 10*time.Millisecond, "the first delivery waits on the held key")

	req, err := http.NewRequest(http.MethodPost, s.srv.URL+"/webhooks/standard", bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range standardDelivery(t, uniq("msg"), body, time.Now()) {
		req.Header[k] = v
	}
	resp, err := s.srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "over the cap")
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))

	other := s.sendStripe([]byte(fmt.Sprintf(`{"id":%q,"object":"event","type":"charge.succeeded","created":%d,"data":{"object":{"id":"ch_cap","object":"charge","payment_intent":%q,"amount":100,"amount_captured":100,"captured":true,"currency":"usd"}}}`, uniq("evt"), time.Now().Unix(), uniq("pi"))))
	assert.Equal(t, http.StatusOK, other.Status, "another provider keeps its own slots: %s", other.Body)

	require.NoError(t, blocker.Rollback(ctx))
	a := <-first
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	assert.Equal(t, "accepted", a.outcome(t))
}
