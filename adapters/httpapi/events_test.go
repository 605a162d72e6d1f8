package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/httpapi"
	"github.com/onceledger/onceledger/projections/outbound"
)

type fakeFeed struct{ got outbound.Query }

func (f *fakeFeed) Page(_ context.Context, q outbound.Query) (outbound.Page, error) {
	f.got = q
	for _, typ := range q.Types {
		if typ == "nope" {
			return outbound.Page{}, outbound.ErrUnknownType
		}
	}
	infos, _ := outbound.Examples()
	return outbound.Page{Events: []outbound.Event{infos[0].Example}, Next: eventstore.Position{Commit: 7, Prepare: 9}}, nil
}

func TestEventsEndpoints(t *testing.T) {
	feed := &fakeFeed{}
	srv := httptest.NewServer(httpapi.NewHandler(httpapi.Config{Logger: slog.New(slog.DiscardHandler),
		APITokens: []string{"tok"}, Outbound: feed}))
	defer srv.Close()
	get := func(path string) (int, map[string]any) {
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		return resp.StatusCode, body
	}
	after := outbound.Cursor(eventstore.Position{Commit: 3, Prepare: 4})
	code, body := get("/v1/events?after=" + after + "&type=payment.captured,refund.succeeded&type=payout.paid&limit=5&wait=2s")
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, outbound.Query{After: eventstore.Position{Commit: 3, Prepare: 4}, Limit: 5, Wait: 2 * time.Second,
		Types: []string{"payment.captured", "refund.succeeded", "payout.paid"}}, feed.got)
	assert.Equal(t, outbound.Cursor(eventstore.Position{Commit: 7, Prepare: 9}), body["next"])
	events := body["events"].([]any)
	require.Len(t, events, 1)
	assert.EqualValues(t, 1, events[0].(map[string]any)["version"])

	for _, bad := range []string{"after=xyz", "limit=0", "limit=x", "wait=61s", "wait=soon", "type=nope"} {
		code, body := get("/v1/events?" + bad)
		assert.Equal(t, http.StatusBadRequest, code, "%s: %v", bad, body)
	}

	code, body = get("/v1/events/types")
	require.Equal(t, http.StatusOK, code)
	types := body["types"].([]any)
	assert.Len(t, types, len(outbound.Types()))
	for _, ti := range types {
		m := ti.(map[string]any)
		assert.Equal(t, m["type"], m["example"].(map[string]any)["type"])
	}
}
