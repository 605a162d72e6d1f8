package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gorilla/mux"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/httpapi"
)

// TestOpenAPIDocumentMatchesRoutes walks the router: every routed path and
// method is in /openapi.json, and every documented one is routed.
// paramPattern is a path parameter with its regexp, as the router spells it.
var paramPattern = regexp.MustCompile(`\{([^:}]+):[^}]*\}`)

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
		path = paramPattern.ReplaceAllString(path, "{$1}") // {payout_id:.+} is {payout_id}
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
	// webhook documents every status of docs/reference.md.
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

// servedOpenAPI is /openapi.json as a server without a database serves it.
func servedOpenAPI(t *testing.T) []byte {
	t.Helper()
	srv := httptest.NewServer(httpapi.NewHandler(httpapi.Config{Logger: slog.New(slog.DiscardHandler)}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/openapi.json")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return body
}

// TestOpenAPIDocumentIsValid checks the served document with kin-openapi
// (the validator oapi-codegen itself loads documents with) and the rules a
// client generator and `redocly lint` (recommended rules) need: a stable
// camelCase operationId on every operation, servers, a licence, security
// stated on every operation (`[]` on the public ones), a 4xx answer on each.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	ctx := context.Background()
	doc, err := openapi3.NewLoader().LoadFromData(servedOpenAPI(t))
	require.NoError(t, err)
	require.NoError(t, doc.Validate(ctx))

	require.NotEmpty(t, doc.Servers, "servers")
	require.NotNil(t, doc.Info.License, "info.license")
	assert.NotEmpty(t, doc.Info.License.URL, "info.license.url")

	camel := regexp.MustCompile(`^(get|post|head|patch|delete)[A-Z][A-Za-z]*$`)
	ids := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			require.Regexp(t, camel, op.OperationID, "%s: operationId", where)
			require.NotContains(t, ids, op.OperationID, "%s: operationId also on %s", where, ids[op.OperationID])
			ids[op.OperationID] = where
			require.NotNil(t, op.Security, "%s: security stated (`[]` when public)", where)
			if strings.HasPrefix(path, "/v1/") {
				require.Equal(t, openapi3.SecurityRequirements{{"bearer": {}}}, *op.Security, where)
			} else {
				require.Empty(t, *op.Security, "%s is public", where)
			}
			has4xx := false
			for code := range op.Responses.Map() {
				has4xx = has4xx || strings.HasPrefix(code, "4")
			}
			require.True(t, has4xx, "%s: a 4xx answer", where)
		}
	}
	// The names clients are generated with: renaming one breaks them.
	for id, where := range map[string]string{
		"postWebhook": "POST /webhooks/{provider}", "headWebhook": "HEAD /webhooks/{provider}",
		"getHealth": "GET /healthz", "getReadiness": "GET /readyz", "getMetrics": "GET /metrics",
		"getOpenAPIDocument": "GET /openapi.json", "getBalances": "GET /v1/balances",
		"getPayment": "GET /v1/payments/{provider}/{payment_id}", "getLedgerEntries": "GET /v1/ledger/entries",
		"getReconciliationItems": "GET /v1/reconciliation", "getProjections": "GET /v1/projections",
	} {
		assert.Equal(t, where, ids[id], id)
	}
}

// The 405 the document promises on the single-method paths is what the
// router answers.
func TestOpenAPIDocumented405(t *testing.T) {
	srv := httptest.NewServer(httpapi.NewHandler(httpapi.Config{Logger: slog.New(slog.DiscardHandler)}))
	defer srv.Close()
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/openapi.json"} {
		req, err := http.NewRequest(http.MethodDelete, srv.URL+path, nil)
		require.NoError(t, err)
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, path)
	}
}

// TestOpenAPIClientIsGenerated regenerates the client with the pinned
// oapi-codegen (`go tool`, from go.mod: no network beyond the module cache)
// and compares it with apiclient/client.gen.go, so the committed client,
// which `go build ./...` compiles, is the document's.
func TestOpenAPIClientIsGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds oapi-codegen")
	}
	out := filepath.Join(t.TempDir(), "client.gen.go")
	cmd := exec.Command("go", "tool", "oapi-codegen", "-config", "apiclient/oapi-codegen.yaml", "-o", out, "openapi.json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), "oapi-codegen: %s", stderr.String())
	want, err := os.ReadFile(out)
	require.NoError(t, err, "oapi-codegen wrote nothing to %s", out)
	got, err := os.ReadFile("apiclient/client.gen.go")
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got),
		"apiclient/client.gen.go is not generated from openapi.json: run `go generate ./adapters/httpapi`")
}
