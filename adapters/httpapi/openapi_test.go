package httpapi_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/gorilla/mux"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/httpapi"
)

// TestOpenAPIDocumentMatchesRoutes walks the router: every routed path and
// method is in /openapi.json, and every documented one is routed.
func TestOpenAPIDocumentMatchesRoutes(t *testing.T) {
	h := httpapi.NewHandler(httpapi.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	router, ok := h.(*mux.Router)
	require.True(t, ok, "NewHandler returns the mux router")

	routed := map[string]bool{} // "GET /v1/balances"
	err := router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		if route.GetName() == "v1-not-found" || route.GetHandler() == nil {
			return nil // the /v1 catch-all and subrouter prefixes are not endpoints
		}
		path, err := route.GetPathTemplate()
		require.NoError(t, err)
		methods, err := route.GetMethods()
		require.NoError(t, err, "route %s has no method restriction", path)
		for _, m := range methods {
			routed[m+" "+path] = true
		}
		return nil
	})
	require.NoError(t, err)
	require.Contains(t, routed, "POST /webhooks/{provider}")
	require.Contains(t, routed, "GET /v1/balances")

	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/openapi.json")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	require.True(t, strings.HasPrefix(doc.OpenAPI, "3."), doc.OpenAPI)

	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for m := range ops {
			switch m {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				documented[strings.ToUpper(m)+" "+path] = true
			}
		}
	}
	require.Equal(t, sorted(routed), sorted(documented))

	// Every /v1 operation declares the bearer scheme and its 401; the
	// webhook documents every status of CONTRACT.md.
	for path, ops := range doc.Paths {
		for m, raw := range ops {
			if m == "parameters" {
				continue
			}
			var op struct {
				Security  []map[string][]string     `json:"security"`
				Responses map[string]map[string]any `json:"responses"`
			}
			require.NoError(t, json.Unmarshal(raw, &op), "%s %s", m, path)
			if strings.HasPrefix(path, "/v1/") {
				require.Equal(t, []map[string][]string{{"bearer": {}}}, op.Security, "%s %s", m, path)
				for _, code := range []string{"200", "400", "401", "503"} {
					require.Contains(t, op.Responses, code, "%s %s", m, path)
				}
			}
			if path == "/webhooks/{provider}" && m == "post" {
				for _, code := range []string{"200", "400", "401", "404", "413", "503"} {
					require.Contains(t, op.Responses, code)
				}
			}
		}
	}
}

func sorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
