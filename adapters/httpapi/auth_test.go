package httpapi

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gorilla/mux"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Read tokens read; admin tokens also act, under their name; a read token
// on an acting endpoint gets 403 and the handler never runs.
func TestTokenRoles(t *testing.T) {
	var ran []string
	cfg := Config{
		Logger:      slog.New(slog.DiscardHandler),
		APITokens:   []string{"reader=r-secret", "anon-read"},
		AdminTokens: []string{"alice=a-secret"},
	}
	r := mux.NewRouter()
	v1 := r.PathPrefix("/v1").Subrouter()
	v1.Use((&server{cfg: cfg, log: cfg.Logger}).tokenAuth().middleware)
	v1.Handle("/test/act", acting(func(w http.ResponseWriter, r *http.Request) {
		p, _ := Principal(r.Context())
		ran = append(ran, p.Actor)
		w.WriteHeader(http.StatusNoContent)
	})).Methods(http.MethodPost)
	h := http.Handler(r)
	do := func(token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/v1/test/act", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	assert.Equal(t, http.StatusUnauthorized, do("").Code)
	assert.Equal(t, http.StatusUnauthorized, do("wrong").Code)
	assert.Equal(t, http.StatusUnauthorized, do("reader=r-secret").Code, "the entry is not the token")
	read := do("r-secret")
	assert.Equal(t, http.StatusForbidden, read.Code)
	assert.Contains(t, read.Body.String(), "admin token")
	assert.Equal(t, http.StatusForbidden, do("anon-read").Code)
	assert.Equal(t, http.StatusNoContent, do("a-secret").Code)
	require.Equal(t, []string{"alice"}, ran, "only the admin acted, under its name")

	// Both kinds read /v1.
	h = NewHandler(cfg)
	for _, tok := range []string{"r-secret", "a-secret"} {
		req := httptest.NewRequest(http.MethodGet, "/v1/balances", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		assert.NotEqual(t, http.StatusUnauthorized, rec.Code, tok)
		assert.NotEqual(t, http.StatusForbidden, rec.Code, tok)
	}
}

// A token list that cannot be read (the same token twice) refuses everyone
// rather than guessing a role.
func TestBadTokenListRefusesEveryone(t *testing.T) {
	h := NewHandler(Config{Logger: slog.New(slog.DiscardHandler), APITokens: []string{"same"}, AdminTokens: []string{"same"}})
	req := httptest.NewRequest(http.MethodGet, "/v1/balances", nil)
	req.Header.Set("Authorization", "Bearer same")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusUnauthorized, rec.Code)
}
