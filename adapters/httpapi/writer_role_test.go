package httpapi_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/mux"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/httpapi"
)

// The role matrix over every /v1 route the router has: a writer token
// reads everything a read token reads, may register and cancel expected
// payments, and gets 403 on every other acting route; a read token gets
// 403 on the writer's routes; an admin passes everywhere.
func TestWriterRoleMatrix(t *testing.T) {
	h := httpapi.NewHandler(httpapi.Config{Logger: slog.New(slog.DiscardHandler),
		APITokens: []string{"reader=r"}, WriterTokens: []string{"shop=w"}, AdminTokens: []string{"ops=a"}})
	router := h.(*mux.Router)
	type route struct{ method, path string }
	var routes []route
	require.NoError(t, router.Walk(func(r *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		if r.GetName() == "v1-not-found" || r.GetHandler() == nil {
			return nil
		}
		tpl, err := r.GetPathTemplate()
		require.NoError(t, err)
		if !strings.HasPrefix(tpl, "/v1/") {
			return nil
		}
		methods, err := r.GetMethods()
		require.NoError(t, err)
		path := paramPattern.ReplaceAllString(tpl, "{$1}")
		path = strings.NewReplacer("{", "x", "}", "x").Replace(path)
		for _, m := range methods {
			routes = append(routes, route{m, path})
		}
		return nil
	}))
	do := func(method, path, token string) int {
		req := httptest.NewRequest(method, path, strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	writers, acting := 0, 0
	for _, r := range routes {
		writerRoute := strings.HasPrefix(r.path, "/v1/expected-payments") && r.method == http.MethodPost
		w, rd, a := do(r.method, r.path, "w"), do(r.method, r.path, "r"), do(r.method, r.path, "a")
		assert.NotEqual(t, http.StatusUnauthorized, w, "%s %s", r.method, r.path)
		assert.NotEqual(t, http.StatusForbidden, a, "admin: %s %s", r.method, r.path)
		switch {
		case writerRoute:
			writers++
			assert.NotEqual(t, http.StatusForbidden, w, "writer: %s %s", r.method, r.path)
			assert.Equal(t, http.StatusForbidden, rd, "reader: %s %s", r.method, r.path)
		case rd == http.StatusForbidden: // an acting route
			acting++
			assert.Equal(t, http.StatusForbidden, w, "writer must not act: %s %s", r.method, r.path)
		default:
			assert.NotEqual(t, http.StatusForbidden, w, "writer reads what a reader reads: %s %s", r.method, r.path)
		}
	}
	assert.Equal(t, 2, writers)
	assert.Greater(t, acting, 5, "the matrix covered the acting routes")
}
