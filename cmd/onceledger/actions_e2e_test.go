package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/esdb/esdbfake"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/standard"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
)

const (
	actAdmin = "admin-token-for-actions"
	actRead  = "read-token-for-actions"
)

// actStack is serve's whole app (projectors included) on a real socket,
// with a read and an admin token.
type actStack struct {
	t    *testing.T
	app  *app.App
	base string
}

func startActStack(t *testing.T, kind eventStoreKind) *actStack {
	t.Helper()
	sw, err := standard.New([]string{standardSecret}, 5*time.Minute)
	require.NoError(t, err)
	cfg := app.Config{
		DatabaseURL: pgtest.NewDatabase(t),
		Projections: true,
		Providers:   map[string]providers.Adapter{"standard": sw},
		APITokens:   []string{"alice=" + actRead},
		AdminTokens: []string{"ops=" + actAdmin},
		Logger:      testLogger(),
		// Serve's defaults (serve sets them from its flags).
		MaxBodyBytes: maxBody, IngestTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second,
		ShutdownTimeout: 5 * time.Second, ProviderConcurrency: -1,
	}
	if kind == onESDB {
		cfg.EventStore = esdbfake.Start(t).URL()
	}
	a, base := serveOnLoopback(t, cfg)
	return &actStack{t: t, app: a, base: base}
}

func (s *actStack) deliver(id, typ string, data map[string]any) string {
	s.t.Helper()
	body := standardBody(typ, data)
	h, err := standard.Sign(standardSecret, id, time.Now(), body)
	require.NoError(s.t, err)
	return s.do(http.MethodPost, "/webhooks/standard", "", body, h).Body
}

func (s *actStack) do(method, path, token string, body []byte, h http.Header) answer {
	s.t.Helper()
	req, err := http.NewRequest(method, s.base+path, bytes.NewReader(body))
	require.NoError(s.t, err)
	for k, vs := range h {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	return answer{Status: resp.StatusCode, Body: string(b)}
}

func (s *actStack) post(path, token string, v any) answer {
	s.t.Helper()
	b, err := json.Marshal(v)
	require.NoError(s.t, err)
	return s.do(http.MethodPost, path, token, b, nil)
}

type listedItem struct {
	ID         string `json:"id"`
	StreamID   string `json:"stream_id"`
	PaymentID  string `json:"payment_id"`
	Kind       string `json:"kind"`
	Key        string `json:"key"`
	Status     string `json:"status"`
	ResolvedBy string `json:"resolved_by"`
	Note       string `json:"note"`
}

// item polls GET /v1/reconciliation until the payment's item of kind
// satisfies ok.
func (s *actStack) item(paymentID, kind string, ok func(listedItem) bool) listedItem {
	s.t.Helper()
	var found listedItem
	require.Eventually(s.t, func() bool {
		a := s.do(http.MethodGet, "/v1/reconciliation?kind="+kind, actRead, nil, nil)
		if a.Status != http.StatusOK {
			return false
		}
		var v struct{ Items []listedItem }
		if json.Unmarshal([]byte(a.Body), &v) != nil {
			return false
		}
		for _, it := range v.Items {
			if it.PaymentID == paymentID && ok(it) {
				found = it
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "item %s of %s", kind, paymentID)
	return found
}

// TestResolveAndReopenAreEvents: an operator resolves and reopens a
// reconciliation item through /v1; each action is an event in the item's
// stream with the actor and note, shown by the list and the payment.
func TestResolveAndReopenAreEvents(t *testing.T) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) {
			s := startActStack(t, kind)
			pay := uniq("pay_orphan")
			s.deliver(uniq("msg"), "refund.succeeded", map[string]any{"payment_id": pay, "refund_id": "re_1", "amount": 500, "currency": "EUR"})
			open := s.item(pay, "refund_before_payment", func(it listedItem) bool { return it.Status == "open" })
			assert.Equal(t, fmt.Sprintf("payment-standard-%s/refund_before_payment/re_1", pay), open.ID)

			// Refusals: a read token, no note, an unknown or malformed id, a
			// body that is not the documented one.
			body := map[string]string{"id": open.ID, "note": "refunded by hand, ticket 42"}
			assert.Equal(t, http.StatusForbidden, s.post("/v1/reconciliation/resolve", actRead, body).Status)
			assert.Equal(t, http.StatusUnauthorized, s.post("/v1/reconciliation/resolve", "", body).Status)
			a := s.post("/v1/reconciliation/resolve", actAdmin, map[string]string{"id": open.ID, "note": "  "})
			assert.Equal(t, http.StatusBadRequest, a.Status)
			assert.Contains(t, a.Body, "note is required")
			assert.Equal(t, http.StatusNotFound, s.post("/v1/reconciliation/resolve", actAdmin,
				map[string]string{"id": fmt.Sprintf("payment-standard-%s/refund_before_payment/re_2", pay), "note": "n"}).Status)
			assert.Equal(t, http.StatusNotFound, s.post("/v1/reconciliation/resolve", actAdmin,
				map[string]string{"id": "payment-standard-nobody/over_refund/x", "note": "n"}).Status)
			assert.Equal(t, http.StatusNotFound, s.post("/v1/reconciliation/resolve", actAdmin,
				map[string]string{"id": "not an id", "note": "n"}).Status)
			assert.Equal(t, http.StatusBadRequest, s.post("/v1/reconciliation/resolve", actAdmin,
				map[string]string{"id": open.ID, "note": "n", "actor": "mallory"}).Status)
			assert.Equal(t, http.StatusConflict, s.post("/v1/reconciliation/reopen", actAdmin,
				map[string]string{"id": open.ID, "note": "n"}).Status, "reopening an open item")

			a = s.post("/v1/reconciliation/resolve", actAdmin, body)
			require.Equal(t, http.StatusOK, a.Status, a.Body)
			assert.JSONEq(t, fmt.Sprintf(`{"id":%q,"status":"resolved","actor":"ops","note":"refunded by hand, ticket 42"}`, open.ID), a.Body)
			a = s.post("/v1/reconciliation/resolve", actAdmin, body)
			assert.Equal(t, http.StatusConflict, a.Status, "resolving a resolved item")
			assert.Contains(t, a.Body, "already resolved")

			resolved := s.item(pay, "refund_before_payment", func(it listedItem) bool { return it.Status == "resolved" })
			assert.Equal(t, "ops", resolved.ResolvedBy)
			assert.Equal(t, "refunded by hand, ticket 42", resolved.Note)
			assert.Equal(t, open.ID, resolved.ID, "the id stays")

			a = s.post("/v1/reconciliation/reopen", actAdmin, map[string]string{"id": open.ID, "note": "the bank says otherwise"})
			require.Equal(t, http.StatusOK, a.Status, a.Body)
			reopened := s.item(pay, "refund_before_payment", func(it listedItem) bool { return it.Status == "open" && it.Note != "" })
			assert.Equal(t, "the bank says otherwise", reopened.Note)
			assert.Empty(t, reopened.ResolvedBy)

			// The actions are events of the payment's stream, with actor and note.
			a = s.do(http.MethodGet, "/v1/payments/standard/"+pay, actRead, nil, nil)
			require.Equal(t, http.StatusOK, a.Status, a.Body)
			var p struct {
				Events []struct {
					Type string          `json:"type"`
					Data json.RawMessage `json:"data"`
				} `json:"events"`
			}
			require.NoError(t, json.Unmarshal([]byte(a.Body), &p))
			var types []string
			for _, e := range p.Events {
				types = append(types, e.Type)
			}
			assert.Equal(t, []string{"refund.pending", "reconciliation.flagged", "reconciliation.resolved", "reconciliation.reopened"}, types)
			require.Len(t, p.Events, 4)
			assert.Contains(t, string(p.Events[2].Data), `"actor":"ops"`)
			assert.Contains(t, string(p.Events[2].Data), `"note":"refunded by hand, ticket 42"`)
		})
	}
}

// legacyIgnored stores, as an older version of onceledger would have, a
// delivery of a type that version did not handle: status ignored, no facts.
func (s *actStack) legacyIgnored(key string, body []byte, typ string) {
	s.t.Helper()
	normalized := fmt.Sprintf(`{"provider":"standard","dedup_key":%q,"type":%q,"occurred_at":"2026-11-29T10:00:00Z","facts":[]}`, key, typ)
	_, err := s.app.Pool().Exec(context.Background(), `
		INSERT INTO webhook_inbox (provider, dedup_key, event_type, payload_hash, facts_hash, raw_body, normalized, status)
		VALUES ('standard', $1, $2, $3, 'legacy', $4, $5, 'ignored')`, key, typ, providers.PayloadHash(body), body, normalized)
	require.NoError(s.t, err)
}

type redriveAnswer struct {
	Selected, Recorded, Ignored, Erased, Skipped, Failed int
	Message                                              string
}

func (s *actStack) redrive(body map[string]string) redriveAnswer {
	s.t.Helper()
	a := s.post("/v1/inbox/redrive", actAdmin, body)
	require.Equal(s.t, http.StatusOK, a.Status, a.Body)
	var r redriveAnswer
	require.NoError(s.t, json.Unmarshal([]byte(a.Body), &r))
	return r
}

// TestRedriveRecordsWhatStoredDeliveriesNowCarry: an ignored delivery whose
// type the current code handles is re-normalized from its raw body and its
// facts recorded; one still unhandled stays ignored; one whose raw body
// was erased is reported as not re-drivable.
func TestRedriveRecordsWhatStoredDeliveriesNowCarry(t *testing.T) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) {
			s := startActStack(t, kind)
			ctx := context.Background()
			pay, oldKey := uniq("pay_legacy"), uniq("msg_legacy")
			s.legacyIgnored(oldKey, standardBody("payment.captured",
				map[string]any{"payment_id": pay, "capture_id": "cap_1", "amount": 4200, "currency": "USD", "fee": 100}), "payment.captured")
			ignoredKey := uniq("msg_customer")
			assert.JSONEq(t, `{"status":"ignored"}`, s.deliver(ignoredKey, "customer.created", map[string]any{"customer_id": "cus_1"}))
			// Retention or `onceledger erase` erased this one's raw body.
			erasedKey := uniq("msg_erased")
			s.legacyIgnored(erasedKey, standardBody("payment.captured", map[string]any{"payment_id": uniq("pay_gone")}), "payment.captured")
			_, err := s.app.Pool().Exec(ctx, `UPDATE webhook_inbox SET raw_body = NULL, raw_erased_at = now() WHERE dedup_key = $1`, erasedKey)
			require.NoError(t, err)

			assert.Equal(t, http.StatusForbidden, s.post("/v1/inbox/redrive", actRead, map[string]string{}).Status)
			assert.Equal(t, http.StatusBadRequest, s.post("/v1/inbox/redrive", actAdmin, map[string]string{"status": "applied"}).Status)
			assert.Equal(t, http.StatusBadRequest, s.post("/v1/inbox/redrive", actAdmin, map[string]string{"provder": "standard"}).Status)

			r := s.redrive(map[string]string{"provider": "standard", "type": "customer.created"})
			assert.Equal(t, redriveAnswer{Selected: 1, Ignored: 1, Message: "1 selected: 0 recorded, 1 still ignored"}, r)

			r = s.redrive(map[string]string{"provider": "standard"})
			assert.Equal(t, 3, r.Selected)
			assert.Equal(t, 1, r.Recorded)
			assert.Equal(t, 1, r.Ignored)
			assert.Equal(t, 1, r.Erased)
			assert.Zero(t, r.Failed)
			assert.Contains(t, r.Message, "1 not re-drivable (raw body erased after the retention period)")

			// The facts it carries are recorded and projected.
			require.Eventually(t, func() bool {
				a := s.do(http.MethodGet, "/v1/payments/standard/"+pay, actRead, nil, nil)
				return a.Status == http.StatusOK && bytes.Contains([]byte(a.Body), []byte(`"captured":4200`))
			}, 30*time.Second, 20*time.Millisecond)
			var status, by string
			require.NoError(t, s.app.Pool().QueryRow(ctx, `SELECT status, redriven_by FROM webhook_inbox WHERE dedup_key = $1`, oldKey).Scan(&status, &by))
			assert.Equal(t, "applied", status)
			assert.Equal(t, "ops", by)

			// Again: nothing left to record; the capture is not recorded twice.
			r = s.redrive(map[string]string{"provider": "standard"})
			assert.Equal(t, redriveAnswer{Selected: 2, Ignored: 1, Erased: 1,
				Message: "2 selected: 0 recorded, 1 still ignored, 1 not re-drivable (raw body erased after the retention period)"}, r)
			// A delivery of the same capture under a new id is a known fact.
			assert.JSONEq(t, `{"status":"accepted"}`, s.deliver(uniq("msg"), "payment.captured",
				map[string]any{"payment_id": pay, "capture_id": "cap_1", "amount": 4200, "currency": "USD", "fee": 100}))
			recs, err := s.app.Events().Store.ReadStream(ctx, "payment-standard-"+pay)
			require.NoError(t, err)
			assert.Len(t, recs, 1, "one capture event")
		})
	}
}

// TestConsoleMountedOnBothStores: serve's app serves the console; a
// payment's timeline is read from the configured event store and the
// projections' lag counted on its feed, EventStoreDB included.
func TestConsoleMountedOnBothStores(t *testing.T) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) {
			s := startActStack(t, kind)
			pay := uniq("pay_console")
			require.JSONEq(t, `{"status":"accepted"}`, s.deliver(uniq("msg"), "payment.captured",
				map[string]any{"payment_id": pay, "capture_id": "cap_1", "amount": 1000, "currency": "USD"}))
			jar, err := cookiejar.New(nil)
			require.NoError(t, err)
			client := &http.Client{Jar: jar}
			resp, err := client.PostForm(s.base+"/console/signin", url.Values{"token": {actRead}})
			require.NoError(t, err)
			_ = resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			get := func(path string) string {
				resp, err := client.Get(s.base + path)
				require.NoError(t, err)
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, b)
				return string(b)
			}
			require.Eventually(t, func() bool {
				return strings.Contains(get("/console/payments/standard/"+pay), "payment.captured")
			}, 30*time.Second, 20*time.Millisecond)
			assert.Contains(t, get("/console/projections"), "live")
			assert.Contains(t, get("/console/periods"), `id="periods"`)
		})
	}
}
