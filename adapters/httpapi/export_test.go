package httpapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/bookexport"
)

// exporterFunc is an Exporter from a function.
type exporterFunc func(ctx context.Context, req bookexport.Request, w io.Writer) error

func (f exporterFunc) Export(ctx context.Context, req bookexport.Request, w io.Writer) error {
	return f(ctx, req, w)
}

func TestExportAnswers(t *testing.T) {
	handler := func(x Exporter) http.Handler {
		return NewHandler(Config{Logger: slog.New(slog.DiscardHandler), APITokens: []string{"reader=r-secret"}, Export: x})
	}
	ok := handler(exporterFunc(func(_ context.Context, req bookexport.Request, w io.Writer) error {
		_, err := io.WriteString(w, "2026-11-01 open Assets:Bank:Payouts\n")
		return err
	}))
	rec := getV1(t, ok, "/v1/export/beancount?from=2026-11-01&to=2026-12-01")
	assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, "text/plain; charset=utf-8", rec.Header().Get("Content-Type"))
	assert.Contains(t, rec.Header().Get("Content-Disposition"), "onceledger.beancount")
	rec = getV1(t, ok, "/v1/export/xero?from=2026-11-01&to=2026-12-01")
	assert.Contains(t, rec.Header().Get("Content-Type"), "text/csv")

	// An account the table cannot name: 422 naming it, nothing written.
	unmapped := handler(exporterFunc(func(context.Context, bookexport.Request, io.Writer) error {
		return &bookexport.UnmappedError{Format: bookexport.Xero, Account: "assets:petty_cash", Reason: "not an account of the chart"}
	}))
	rec = getV1(t, unmapped, "/v1/export/xero?from=2026-11-01&to=2026-12-01")
	assert.Equal(t, http.StatusUnprocessableEntity, rec.Code)
	assert.Contains(t, rec.Body.String(), "assets:petty_cash")

	// Bad parameters are 400 naming them, before the exporter is asked.
	for q, want := range map[string]string{
		"/v1/export/gnucash?from=2026-11-01&to=2026-12-01":   "format",
		"/v1/export/hledger?from=2026-11-01":                 "to",
		"/v1/export/hledger?from=01/11/2026&to=2026-12-01":   "from",
		"/v1/export/hledger?from=2026-12-01&to=2026-12-01":   "to",
		"/v1/export/quickbooks?from=2026-11-01&to=2026-13-1": "to",
	} {
		rec := getV1(t, unmapped, q)
		assert.Equal(t, http.StatusBadRequest, rec.Code, q)
		assert.Contains(t, rec.Body.String(), want, q)
	}
	// Not configured: 503.
	rec = getV1(t, handler(nil), "/v1/export/hledger?from=2026-11-01&to=2026-12-01")
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
}

// An export that fails after its first bytes left cannot change its status
// any more: the connection is cut, so the client's read fails rather than
// ending on a file that looks whole (a truncated beancount file might still
// pass bean-check). Over a real socket: the recorder cannot show it.
func TestExportFailingMidStreamCutsTheConnection(t *testing.T) {
	var failed atomic.Bool
	h := NewHandler(Config{Logger: slog.New(slog.DiscardHandler), APITokens: []string{"reader=r-secret"},
		Export: exporterFunc(func(_ context.Context, req bookexport.Request, w io.Writer) error {
			line := strings.Repeat("x", 1023) + "\n"
			for range 256 { // well past every buffer on the way
				if _, err := io.WriteString(w, line); err != nil {
					return err
				}
			}
			failed.Store(true)
			return errors.New("database went away")
		})})
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/export/beancount?from=2026-11-01&to=2026-12-01", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer r-secret")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "read %d bytes", len(body))
	assert.True(t, failed.Load())
}
