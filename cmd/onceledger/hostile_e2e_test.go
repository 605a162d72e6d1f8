package main_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/jetstream"
	"github.com/onceledger/onceledger/adapters/outbox"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/providers/report/bombtest"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/payment"
)

// foldAlipayParam reshapes a signed Alipay body without the key: folded's
// parameter is removed and appended to into's value as "%26folded%3D…".
// The decoded pairs joined by '&' are the bytes Alipay signed, unchanged.
func foldAlipayParam(t *testing.T, body []byte, into, folded string) []byte {
	t.Helper()
	segs := strings.Split(string(body), "&")
	var raw string
	out := segs[:0]
	for _, s := range segs {
		if v, ok := strings.CutPrefix(s, folded+"="); ok {
			raw = v
			continue
		}
		out = append(out, s)
	}
	require.NotEmpty(t, raw)
	for i, s := range out {
		if strings.HasPrefix(s, into+"=") {
			out[i] = s + "%26" + folded + "%3D" + raw
			return []byte(strings.Join(out, "&"))
		}
	}
	t.Fatalf("no %s", into)
	return nil
}

// Issue 33, finding 2: a reshaped copy of a genuine notification, sent
// first, is refused (401, nothing recorded); the genuine delivery after it
// is booked normally. Folding the next parameter into notify_type makes a
// notification that is not trade_status_sync: before the fix, recorded as
// ignored under the genuine notify_id, after which the genuine delivery
// only conflicted with it and the money was never booked.
func TestAlipayReshapedCopyRefusedGenuineBooked(t *testing.T) {
	eachCNStore(t, func(t *testing.T, s *cnStack) {
		trade := uniqCN("2026H")
		stream := "payment-alipay-" + trade
		paid := alipayBody(t, s.alipayKey, alipayNotification("n-h-pay", trade, "TRADE_SUCCESS", nil))
		reshaped := foldAlipayParam(t, paid, "notify_type", "out_trade_no")
		a := s.alipay(reshaped)
		assert.Equal(t, http.StatusUnauthorized, a.Status, a.Body)
		assert.NotEqual(t, "success", a.Body)
		assert.Empty(t, s.streamTypes(stream), "nothing recorded for the reshaped capture")
		wantSuccess(t, s.alipay(paid), "the genuine capture")
		assert.Equal(t, []string{payment.TypeCaptured}, s.streamTypes(stream))

		refund := alipayBody(t, s.alipayKey, alipayNotification("n-h-r1", trade, "TRADE_SUCCESS",
			map[string]string{"refund_fee": "10.00", "out_biz_no": "biz-1", "gmt_refund": "2026-11-30 09:00:00"}))
		a = s.alipay(foldAlipayParam(t, refund, "notify_type", "out_biz_no"))
		assert.Equal(t, http.StatusUnauthorized, a.Status, a.Body)
		assert.Equal(t, []string{payment.TypeCaptured}, s.streamTypes(stream), "nothing recorded for the reshaped refund")
		wantSuccess(t, s.alipay(refund), "the genuine refund")
		assert.Equal(t, []string{payment.TypeCaptured, payment.TypeRefundPosted}, s.streamTypes(stream))
	})
}

// Issue 33, finding 1: an item a disabled subscription opened before the
// redaction (its stored event names the whole URL and the receiver's
// error) reaches read tokens with the subscription id and the URL's host
// only: GET /v1/reconciliation (the projection) and GET /v1/events (the
// outbound feed NATS and every subscriber read too). Both event stores.
func TestOldSubscriptionItemRedactedOnEveryReadPath(t *testing.T) {
	eachCNStore(t, checkOldSubscriptionItemRedacted)
}

func checkOldSubscriptionItemRedacted(t *testing.T, s *cnStack) {
	sub := uuid.New().String()
	const secret = "SECRETs3cr3t"
	old := payment.Flagged{Meta: payment.Meta{PaymentKey: sub, OccurredAt: time.Now().UTC()},
		Kind: payment.ReconSubscriptionDisabled, Key: sub,
		Details: "push subscription to https://hooks.example.com/services/T0/B0/" + secret + "?api_key=" + secret +
			" disabled after its retry schedule: event x attempt 9: HTTP 500 " + secret + "; re-enable it once the endpoint answers"}
	typ, data, err := payment.Encode(old)
	require.NoError(t, err)
	_, err = s.app.Events().Store.Append(context.Background(), delivery.SubscriptionStream(sub), eventstore.NoStream,
		[]eventstore.EventData{{ID: uuid.New(), Type: typ, Data: data}})
	require.NoError(t, err)
	read := http.Header{"Authorization": {"Bearer " + cnReadToken}}
	var items string
	deadline := time.Now().Add(10 * time.Second)
	for {
		a := s.do(http.MethodGet, "/v1/reconciliation?kind=subscription_disabled&status=open", read, nil)
		require.Equal(t, http.StatusOK, a.Status, a.Body)
		if strings.Contains(a.Body, sub) {
			items = a.Body
			break
		}
		require.True(t, time.Now().Before(deadline), "the item never appeared: %s", a.Body)
		time.Sleep(50 * time.Millisecond)
	}
	assert.NotContains(t, items, secret)
	assert.NotContains(t, items, "/services/")
	assert.Contains(t, items, "hooks.example.com")
	feed := s.do(http.MethodGet, "/v1/events?type=reconciliation.opened&limit=1000", read, nil)
	require.Equal(t, http.StatusOK, feed.Status, feed.Body)
	require.Contains(t, feed.Body, sub)
	assert.NotContains(t, feed.Body, secret)
	assert.Contains(t, feed.Body, payment.SubscriptionDisabledDetails(sub, "hooks.example.com"))
}

// Issue 33, finding 5: a WeChat Pay gzip bill bomb (255 KB → 256 MiB on one
// line) and an Alipay zip of 1M empty entries are refused with 400 naming
// the limit crossed, and nothing is imported.
func TestDecompressionBombUploadsRefused(t *testing.T) {
	s := settleStack(t, onPostgres)
	ans := s.v1(http.MethodPost, "/v1/settlements/wechatpay", bombtest.GzipOneLine())
	assert.Equal(t, http.StatusBadRequest, ans.Status, ans.Body)
	assert.Contains(t, ans.Body, "over the limit of")
	zipBomb, err := io.ReadAll(bombtest.ZipEmptyEntries(1 << 20))
	require.NoError(t, err)
	ans = s.v1(http.MethodPost, "/v1/settlements/alipay", zipBomb)
	assert.Equal(t, http.StatusBadRequest, ans.Status, ans.Body)
	assert.Contains(t, ans.Body, "zip entries over the limit of 64")
	assert.Zero(t, queryInt(t, s.pool, "SELECT count(*) FROM events"), "nothing imported")
}

// Issue 33, finding 7: serve refusing to start because NATS cannot be
// reached names the URL without its password (or token), in the error and
// in the log.
func TestNATSUnreachableStartErrorHidesCredentials(t *testing.T) {
	db := pgtest.NewDatabase(t)
	for _, u := range []string{"nats://alice:s3cretPASSWORD@127.0.0.1:1", "nats://s3cretTOKEN@127.0.0.1:1",
		"nats://127.0.0.1:1,nats://bob:s3cretPASSWORD@127.0.0.1:2"} {
		var logs bytes.Buffer
		a := newApp(t, app.Config{DatabaseURL: db, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
			ShutdownTimeout: time.Second, NATS: jetstream.Config{URL: u}, Addr: "127.0.0.1:0"})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := a.Run(ctx)
		cancel()
		require.Error(t, err, u)
		assert.Contains(t, err.Error(), "127.0.0.1:1", "the error names the server")
		assert.NotContains(t, err.Error(), "s3cret", u)
		assert.NotContains(t, logs.String(), "s3cret", u)
	}
}

// Issue 33, finding 8: a payout id holding "../" (an Alipay withdrawal id)
// opens by its escaped path on /v1 and in the console, through serve's
// whole router (no redirect to a cleaned path).
func TestPayoutIDWithDotDotReachable(t *testing.T) {
	s := settleStack(t, onPostgres)
	const id = "20261201/../W1"
	_, err := s.pool.Exec(context.Background(), `INSERT INTO payouts (provider, payout_id, amount, currency,
		arrival_date, paid, status, line_count, lines_net, difference, updated_at)
		VALUES ('alipay', $1, 10000, 'CNY', now(), true, 'reconciled', 0, 0, 0, now())`, id)
	require.NoError(t, err)
	escaped := "/payouts/alipay/20261201%2F..%2FW1"
	ans := s.v1(http.MethodGet, "/v1"+escaped, nil)
	require.Equal(t, http.StatusOK, ans.Status, ans.Body)
	assert.Contains(t, ans.Body, `"payout_id":"20261201/../W1"`)

	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	hc := &http.Client{Jar: jar}
	resp, err := hc.PostForm(s.srv.URL+"/console/signin", url.Values{"token": {settleReadToken}})
	require.NoError(t, err)
	resp.Body.Close()
	get := func(path string) (int, string, string) {
		resp, err := hc.Get(s.srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Request.URL.EscapedPath()
	}
	status, body, _ := get("/console/payouts")
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, `href="/console`+escaped+`"`, "the list links to the escaped id")
	status, body, at := get("/console" + escaped)
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, "/console"+escaped, at, "no redirect")
	assert.Contains(t, body, "20261201/../W1")
}

// Issue 33, finding 8: serve with a well-formed ONCELEDGER_SECRETS_KEY that
// cannot open the stored secrets stops at start, naming the variable.
func TestServeRefusesAWrongSecretsKey(t *testing.T) {
	db := pgtest.NewDatabase(t)
	first := newApp(t, app.Config{DatabaseURL: db, SecretsKey: subsTestKey, Logger: testLogger(), OutboxAllowPrivate: true})
	_, err := first.Subscriptions().Create(context.Background(), outbox.NewSubscription{URL: "https://shop.example/h"}, "ops", "")
	require.NoError(t, err)

	wrong := strings.Repeat("ab", 32)
	a := newApp(t, app.Config{DatabaseURL: db, SecretsKey: wrong, Logger: testLogger(), Addr: "127.0.0.1:0",
		ShutdownTimeout: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = a.Run(ctx)
	require.ErrorIs(t, err, outbox.ErrBadSecretsKey)
	assert.ErrorContains(t, err, "ONCELEDGER_SECRETS_KEY")
	require.NoError(t, ctx.Err(), "refused at start, not at the deadline")
}

// Issue 33, finding 7: a database URL that cannot be used is named
// without its password (pgx masks it; this keeps it so).
func TestDatabaseStartErrorHidesThePassword(t *testing.T) {
	for _, u := range []string{"postgres://alice:s3cretPASSWORD@127.0.0.1:1/x?sslmode=disable&connect_timeout=2",
		"postgres://alice:s3cretPASSWORD@127.0.0.1:notaport/x"} {
		var logs bytes.Buffer
		_, err := app.New(context.Background(), app.Config{DatabaseURL: u, Migrate: true,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		require.Error(t, err, u)
		assert.NotContains(t, err.Error(), "s3cret", u)
		assert.NotContains(t, logs.String(), "s3cret", u)
	}
}

// A payment whose id holds "../" opens by its escaped path on /v1 too.
func TestPaymentIDWithDotDotReachable(t *testing.T) {
	c, send := subsApp(t, subsTestKey)
	id := "pay/../" + uuid.NewString()
	send(uuid.NewString(), standardBody("payment.captured", map[string]any{"payment_id": id, "capture_id": "cap-1",
		"amount": 1000, "currency": "USD"}))
	var got map[string]any
	deadline := time.Now().Add(10 * time.Second)
	for {
		got = nil
		status := c.do(http.MethodGet, "/v1/payments/standard/"+url.PathEscape(id), "rtok", nil, &got)
		if status == http.StatusOK || time.Now().After(deadline) {
			require.Equal(t, http.StatusOK, status, "%v", got)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	assert.Equal(t, id, got["payment_id"])

	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	hc := &http.Client{Jar: jar}
	resp, err := hc.PostForm(c.base+"/console/signin", url.Values{"token": {"rtok"}})
	require.NoError(t, err)
	resp.Body.Close()
	resp, err = hc.Get(c.base + "/console/payments/standard/" + url.PathEscape(id))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	assert.Equal(t, "/console/payments/standard/"+url.PathEscape(id), resp.Request.URL.EscapedPath(), "no redirect")
	assert.Contains(t, string(body), "cap-1")
}
