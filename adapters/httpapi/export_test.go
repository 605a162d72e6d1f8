package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

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
