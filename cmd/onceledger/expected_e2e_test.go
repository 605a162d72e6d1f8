package main_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/askers"
	"github.com/onceledger/onceledger/adapters/expectations"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/alipay"
	"github.com/onceledger/onceledger/adapters/providers/alipay/alipayapi"
	"github.com/onceledger/onceledger/adapters/providers/alipay/alipayapi/alipayfake"
	"github.com/onceledger/onceledger/adapters/providers/registry"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
)

// shopEvent is one outbound event as the shop reads GET /v1/events.
type shopEvent struct {
	ID        string         `json:"id"`
	Type      string         `json:"type"`
	PaymentID string         `json:"payment_id"`
	Data      map[string]any `json:"data"`
}

// TestShipOnceLearnedByQuery is TestShipOnce's promise (cmd/loadgen/chaos)
// for a payment whose notification never came (掉单): the shop's order
// service registers the order with its writer token; Alipay's notification
// is lost; serve asks alipay.trade.query (the double), records the answer
// through the webhook gate, and the shop, which ships on payment.captured,
// ships the order once. When the notification then arrives after all, it
// is one fact already recorded: no second payment.captured, no second
// shipment, one posting.
func TestShipOnceLearnedByQuery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st := startQueryStack(t)
	fake, a, keys := st.fake, st.app, [1]*rsa.PrivateKey{st.notifKey}
	const writer, reader = qsWriter, qsReader
	base := st.base
	do := func(method, path, token string, body []byte, out any) int {
		return st.do(t, ctx, method, path, token, body, out)
	}
	// The order service registers what it expects; a reader may not.
	reg := []byte(`{"provider":"alipay","reference":"ORDER-7","amount":8800,"currency":"CNY","expires_at":"` +
		time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `"}`)
	assert.Equal(t, http.StatusForbidden, do(http.MethodPost, "/v1/expected-payments", reader, reg, nil))
	var x struct {
		ID, Status string
	}
	require.Equal(t, http.StatusOK, do(http.MethodPost, "/v1/expected-payments", writer, reg, &x))
	assert.Equal(t, "expected", x.Status)
	assert.Equal(t, http.StatusBadRequest, do(http.MethodPost, "/v1/expected-payments", writer,
		[]byte(`{"provider":"alipay","reference":"ORDER-8","amount":"88.00","currency":"CNY","expires_at":"2030-01-01T00:00:00Z"}`), nil))

	// The buyer pays; Alipay's notification is lost. Alipay knows the
	// trade: paid, with a 8.00 merchant coupon.
	fake.SetTrade("ORDER-7", alipayfake.Trade{TradeNo: "2026120722001400007", Status: "TRADE_SUCCESS", TotalAmount: "88.00",
		ReceiptAmount: "80.00", SendPayDate: "2026-12-07 10:00:05",
		Vouchers: []map[string]string{{"id": "V7", "type": "ALIPAY_BIZ_VOUCHER", "amount": "8.00", "merchant_contribute": "8.00", "other_contribute": "0.00"}}})

	// The shop ships on payment.captured, once per payment (its UNIQUE key).
	shipped := map[string]int{}
	var feed []shopEvent
	cursor := ""
	readFeed := func(wait string) {
		var page struct {
			Events []shopEvent `json:"events"`
			Next   string      `json:"next"`
		}
		require.Equal(t, http.StatusOK, do(http.MethodGet, "/v1/events?type=payment.captured,expected_payment.paid&wait="+wait+"&after="+cursor, reader, nil, &page))
		for _, e := range page.Events {
			feed = append(feed, e)
			if e.Type == "payment.captured" {
				shipped[e.PaymentID]++
			}
		}
		if page.Next != "" {
			cursor = page.Next
		}
	}
	q := a.Querier("test-querier", nil)
	require.NoError(t, untilNil(ctx, func() error {
		if _, err := q.Sweep(ctx); err != nil {
			return err
		}
		readFeed("0s")
		var list struct {
			Expected []struct{ Status string } `json:"expected_payments"`
		}
		do(http.MethodGet, "/v1/expected-payments?status=paid", reader, nil, &list)
		if len(shipped) == 0 || len(list.Expected) == 0 {
			return fmt.Errorf("not shipped yet (asked %d times)", fake.Queries("ORDER-7"))
		}
		return nil
	}))
	assert.Equal(t, map[string]int{"2026120722001400007": 1}, shipped, "shipped once, learned by query")

	// The notification arrives after all: one fact, nothing new.
	body := alipayBody(t, keys[0], alipayNotification("late-notify-7", "2026120722001400007", "TRADE_SUCCESS",
		map[string]string{"out_trade_no": "ORDER-7", "total_amount": "88.00", "receipt_amount": "80.00",
			"gmt_payment": "2026-12-07 10:00:05"}))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/webhooks/alipay", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, err = q.Sweep(ctx) // nothing due any more
	require.NoError(t, err)
	// A second capture, had the notification recorded one, would be in the
	// feed at once: the long poll answers as soon as anything new is there.
	readFeed("1s")
	assert.Equal(t, map[string]int{"2026120722001400007": 1}, shipped, "still shipped once")
	types := map[string]int{}
	for _, e := range feed {
		types[e.Type]++
	}
	assert.Equal(t, map[string]int{"payment.captured": 1, "expected_payment.paid": 1}, types)

	var bal struct {
		Balances []struct {
			Account string
			Balance int64
		} `json:"balances"`
	}
	require.Equal(t, http.StatusOK, do(http.MethodGet, "/v1/balances?currency=CNY", reader, nil, &bal))
	got := map[string]int64{}
	for _, b := range bal.Balances {
		got[b.Account] = b.Balance
	}
	assert.Equal(t, int64(-8800), got["revenue:sales"], "one posting")
	assert.Equal(t, int64(800), got["expenses:discounts:alipay"], "the coupon the answer carried")

	checkExpectedPages(t, ctx, do, writer, reader)

	// /metrics counts the questions per provider and outcome.
	req, err = http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	require.NoError(t, err)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Contains(t, string(metrics), `onceledger_provider_queries_total{outcome="forged",provider="alipay"}`)

}

// untilNil retries f every 50 ms until it returns nil or ctx ends (then its
// last error).
func untilNil(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// queryStack is serve's app with Alipay configured and asked (the
// double's gateway), a writer and a reader token.
type queryStack struct {
	app      *app.App
	base     string
	fake     *alipayfake.Fake
	notifKey *rsa.PrivateKey
}

const (
	qsWriter = "shop-writer-token"
	qsReader = "shop-read-token"
)

func startQueryStack(t *testing.T) *queryStack {
	t.Helper()
	keys, err := cnKeys()
	require.NoError(t, err)
	appKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	fake, err := alipayfake.New(cnAppID, &appKey.PublicKey)
	require.NoError(t, err)
	gateway := httptest.NewServer(fake)
	t.Cleanup(gateway.Close)

	dir := t.TempDir()
	fakeKey := filepath.Join(dir, "alipay-api.pem")
	require.NoError(t, os.WriteFile(fakeKey, fake.PublicKeyPEM(), 0o600))
	set := registry.NewSet()
	ali := set.Config(alipay.Name).(*alipay.Config)
	// Alipay signs its notifications and its answers with one key; here
	// the test's notifications and the double's answers have a key each.
	ali.PublicKeys, ali.AppIDs = []string{pemFile(t, dir, "alipay.pem", keys[0]), fakeKey}, []string{cnAppID}
	provs, err := set.Adapters(providers.Settings{Tolerance: 5 * time.Minute})
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(appKey)
	require.NoError(t, err)
	privPath := filepath.Join(dir, "app.pem")
	require.NoError(t, os.WriteFile(privPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	client, err := alipayapi.Config{AppPrivateKey: privPath, Gateway: gateway.URL + "/gateway.do"}.Client(ali.PublicKeys, ali.AppIDs)
	require.NoError(t, err)

	a, base := serveOnLoopback(t, app.Config{
		DatabaseURL: pgtest.NewDatabase(t), Projections: true, Providers: provs, Logger: testLogger(),
		APITokens: []string{"shop=" + qsReader}, WriterTokens: []string{"orders=" + qsWriter},
		MaxBodyBytes: maxBody, IngestTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second, ShutdownTimeout: 5 * time.Second,
		ProviderConcurrency: -1, QueryAfter: time.Millisecond,
		Askers: map[string]expectations.Asker{alipay.Name: askers.Alipay{Client: client, AppID: cnAppID}},
	})
	return &queryStack{app: a, base: base, fake: fake, notifKey: keys[0]}
}

// do sends a request with token and decodes the JSON answer into out.
func (s *queryStack) do(t *testing.T, ctx context.Context, method, path, token string, body []byte, out any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, bytes.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if out != nil {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
	}
	return resp.StatusCode
}

// checkExpectedPages: the list pages by cursor, newest registration first.
func checkExpectedPages(t *testing.T, ctx context.Context, do func(method, path, token string, body []byte, out any) int, writer, reader string) {
	t.Helper()
	for _, ref := range []string{"ORDER-8", "ORDER-9"} {
		require.Equal(t, http.StatusOK, do(http.MethodPost, "/v1/expected-payments", writer, []byte(`{"provider":"alipay","reference":"`+ref+
			`","amount":100,"currency":"CNY","expires_at":"`+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)+`"}`), nil))
	}
	require.NoError(t, untilNil(ctx, func() error {
		var all struct {
			Expected []struct{ Reference string } `json:"expected_payments"`
		}
		do(http.MethodGet, "/v1/expected-payments", reader, nil, &all)
		if len(all.Expected) < 3 {
			return fmt.Errorf("the manager has not listed them yet")
		}
		return nil
	}))
	var seen []string
	next := ""
	for range 5 {
		var page struct {
			Expected []struct{ Reference string } `json:"expected_payments"`
			Next     string                       `json:"next_cursor"`
		}
		require.Equal(t, http.StatusOK, do(http.MethodGet, "/v1/expected-payments?limit=2&cursor="+next, reader, nil, &page))
		for _, e := range page.Expected {
			seen = append(seen, e.Reference)
		}
		if next = page.Next; next == "" {
			break
		}
	}
	assert.ElementsMatch(t, []string{"ORDER-7", "ORDER-8", "ORDER-9"}, seen)
	assert.Equal(t, http.StatusBadRequest, do(http.MethodGet, "/v1/expected-payments?cursor=bogus", reader, nil, nil))
}
