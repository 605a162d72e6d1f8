package main_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/outbox"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/standard"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
)

var subsTestKey = hex.EncodeToString([]byte("fedcba9876543210fedcba9876543210"))

type subsClient struct {
	t    *testing.T
	base string
}

// do sends a JSON request with token and decodes the answer into out.
func (c subsClient) do(method, path, token string, body any, out any) int {
	c.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(c.t, err)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, r)
	require.NoError(c.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	if out != nil && len(b) > 0 {
		require.NoError(c.t, json.Unmarshal(b, out), "%s %s: %s", method, path, b)
	}
	return resp.StatusCode
}

func subsApp(t *testing.T, key string, now ...func() time.Time) (subsClient, func(id string, body []byte)) {
	sw, err := standard.New([]string{standardSecret}, 5*time.Minute)
	require.NoError(t, err)
	oc := app.OutboxConfig{Options: outbox.SenderOptions{Poll: 50 * time.Millisecond}}
	if len(now) > 0 {
		oc.Now = now[0]
	}
	_, base := serveOnLoopback(t, app.Config{
		DatabaseURL: pgtest.NewDatabase(t), Providers: map[string]providers.Adapter{"standard": sw},
		APITokens: []string{"reader=rtok"}, AdminTokens: []string{"alice=atok"}, Logger: testLogger(),
		SecretsKey: key, OutboxAllowPrivate: true, ShutdownTimeout: 5 * time.Second, Projections: true,
		Outbox: oc,
	})
	send := func(id string, body []byte) {
		req, err := http.NewRequest(http.MethodPost, base+"/webhooks/standard", bytes.NewReader(body))
		require.NoError(t, err)
		for k, v := range standardDelivery(t, id, body, time.Now()) {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	return subsClient{t: t, base: base}, send
}

// The admin endpoints through serve's app: create (secret once), a
// capture delivered signed to the receiver, list, get, patch, deliveries,
// rotate, replay, enable, delete; a read token is 403, an unknown id 404,
// an unknown type 400.
func TestSubscriptionsAdminAPI(t *testing.T) {
	c, send := subsApp(t, subsTestKey)
	var mu sync.Mutex
	var got []string
	var wh *standardwebhooks.Webhook
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if wh == nil || wh.Verify(body, r.Header) != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		got = append(got, r.Header.Get("webhook-id"))
	}))
	defer rc.Close()

	var bad map[string]string
	assert.Equal(t, http.StatusForbidden, c.do("POST", "/v1/subscriptions", "rtok", map[string]any{"url": rc.URL}, &bad))
	assert.Equal(t, http.StatusBadRequest, c.do("POST", "/v1/subscriptions", "atok", map[string]any{"url": rc.URL, "types": []string{"payment.nope"}}, &bad))
	assert.Contains(t, bad["error"], "payment.nope")
	var created struct{ ID, Secret string }
	require.Equal(t, http.StatusOK, c.do("POST", "/v1/subscriptions", "atok",
		map[string]any{"url": rc.URL, "types": []string{"payment.captured"}, "description": "shop"}, &created))
	require.Regexp(t, `^whsec_`, created.Secret)
	mu.Lock()
	wh, _ = standardwebhooks.NewWebhook(created.Secret)
	mu.Unlock()

	send(uniq("evt"), standardBody("payment.captured", map[string]any{"payment_id": uniq("pay"), "capture_id": uniq("cap"), "amount": 1000, "currency": "USD"}))
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == 1 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the capture never arrived")
		time.Sleep(20 * time.Millisecond)
	}

	var list struct {
		Subscriptions []map[string]any `json:"subscriptions"`
	}
	require.Equal(t, http.StatusOK, c.do("GET", "/v1/subscriptions", "atok", nil, &list))
	require.Len(t, list.Subscriptions, 1)
	s0 := list.Subscriptions[0]
	assert.Equal(t, created.ID, s0["id"])
	assert.Equal(t, "shop", s0["description"])
	assert.Equal(t, "alice", s0["created_by"])
	assert.NotContains(t, s0, "secret")
	for _, k := range []string{"state", "cursor", "last_error", "pending", "types", "providers"} {
		assert.Contains(t, s0, k)
	}

	var one map[string]any
	require.Equal(t, http.StatusOK, c.do("PATCH", "/v1/subscriptions/"+created.ID, "atok", map[string]any{"description": "fulfilment"}, &one))
	assert.Equal(t, "fulfilment", one["description"])
	assert.Equal(t, []any{"payment.captured"}, one["types"])
	var dels struct {
		Deliveries []map[string]any `json:"deliveries"`
	}
	// The receiver has the delivery before the sender has its answer and
	// records the success: read until it has (CI once read too soon).
	require.Eventually(t, func() bool {
		dels.Deliveries = nil
		return c.do("GET", "/v1/subscriptions/"+created.ID+"/deliveries?status=succeeded", "atok", nil, &dels) == http.StatusOK &&
			len(dels.Deliveries) == 1
	}, 10*time.Second, 20*time.Millisecond, "the success recorded")
	mu.Lock()
	assert.Equal(t, got[0], dels.Deliveries[0]["event_id"])
	mu.Unlock()
	assert.EqualValues(t, 200, dels.Deliveries[0]["status"])

	var rot map[string]any
	require.Equal(t, http.StatusOK, c.do("POST", "/v1/subscriptions/"+created.ID+"/rotate-secret", "atok", map[string]any{"note": "yearly"}, &rot))
	assert.Regexp(t, `^whsec_`, rot["secret"])
	assert.NotEmpty(t, rot["old_secret_expires_at"])
	require.Equal(t, http.StatusOK, c.do("POST", "/v1/subscriptions/"+created.ID+"/replay", "atok", map[string]any{"from_time": "2020-01-01T00:00:00Z"}, &one))
	assert.NotNil(t, one["replay"])
	require.Equal(t, http.StatusOK, c.do("POST", "/v1/subscriptions/"+created.ID+"/enable", "atok", nil, &one))
	assert.Equal(t, "active", one["state"])

	assert.Equal(t, http.StatusNotFound, c.do("GET", "/v1/subscriptions/00000000-0000-0000-0000-000000000000", "atok", nil, &bad))
	assert.Equal(t, http.StatusNotFound, c.do("GET", "/v1/subscriptions/nope", "atok", nil, &bad))
	var del map[string]string
	require.Equal(t, http.StatusOK, c.do("DELETE", "/v1/subscriptions/"+created.ID, "atok", map[string]any{"note": "shop closed"}, &del))
	assert.Equal(t, map[string]string{"id": created.ID, "status": "deleted"}, del)
	assert.Equal(t, http.StatusNotFound, c.do("GET", "/v1/subscriptions/"+created.ID, "atok", nil, &bad))
}

// Without ONCELEDGER_SECRETS_KEY a subscription cannot be created: 503
// naming the variable.
func TestSubscriptionsNeedTheSecretsKey(t *testing.T) {
	c, _ := subsApp(t, "")
	var bad map[string]string
	assert.Equal(t, http.StatusServiceUnavailable, c.do("POST", "/v1/subscriptions", "atok", map[string]any{"url": "https://shop.example/h"}, &bad))
	assert.Contains(t, bad["error"], "ONCELEDGER_SECRETS_KEY")
}

// A subscription whose endpoint never answers 2xx is disabled after its
// schedule (an injected clock runs through it) and opens an operators'
// item (GET /v1/reconciliation?kind=subscription_disabled); enabling it
// resolves the item with the actor.
func TestSubscriptionDisabledOpensAnItem(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	c, send := subsApp(t, subsTestKey, clock)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer rc.Close()
	var created struct{ ID, Secret string }
	require.Equal(t, http.StatusOK, c.do("POST", "/v1/subscriptions", "atok", map[string]any{"url": rc.URL}, &created))
	send(uniq("evt"), standardBody("payment.captured", map[string]any{"payment_id": uniq("pay"), "capture_id": uniq("cap"), "amount": 1000, "currency": "USD"}))
	var items struct {
		Items []map[string]any `json:"items"`
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		now = now.Add(11 * time.Hour)
		mu.Unlock()
		items.Items = nil
		require.Equal(t, http.StatusOK, c.do("GET", "/v1/reconciliation?kind=subscription_disabled&status=open", "atok", nil, &items))
		if len(items.Items) == 1 {
			break
		}
		require.True(t, time.Now().Before(deadline), "never disabled with an item")
		time.Sleep(100 * time.Millisecond)
	}
	var one map[string]any
	require.Equal(t, http.StatusOK, c.do("GET", "/v1/subscriptions/"+created.ID, "atok", nil, &one))
	assert.Equal(t, "disabled", one["state"])
	assert.Contains(t, one["last_error"], "HTTP 502")
	require.Equal(t, http.StatusOK, c.do("POST", "/v1/subscriptions/"+created.ID+"/enable", "atok", map[string]any{"note": "fixed"}, &one))
	for {
		items.Items = nil
		require.Equal(t, http.StatusOK, c.do("GET", "/v1/reconciliation?kind=subscription_disabled&status=resolved", "atok", nil, &items))
		if len(items.Items) == 1 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the item never resolved")
		time.Sleep(50 * time.Millisecond)
	}
	assert.Equal(t, "alice", items.Items[0]["resolved_by"])
}
