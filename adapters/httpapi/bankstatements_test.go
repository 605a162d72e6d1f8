package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/bankfile"
	"github.com/onceledger/onceledger/adapters/bankimport"
)

// bankImporterDouble parses what it is given with the real parser (so a
// malformed file is the real error) and records nothing.
type bankImporterDouble struct {
	account string
	reads   int
}

func (d *bankImporterDouble) ImportBankStatement(_ context.Context, account string, src ReportSource) (BankImportSummary, error) {
	if err := bankimport.CheckAccount(account); err != nil {
		return BankImportSummary{}, err
	}
	d.account = account
	r, err := src()
	if err != nil {
		return BankImportSummary{}, err
	}
	defer r.Close()
	d.reads++
	n := 0
	f, err := bankfile.Parse(r, bankfile.Sink{Entry: func(*bankfile.Statement, bankfile.Entry) error { n++; return nil }})
	return BankImportSummary{Format: string(f), Lines: n, New: n}, err
}

func TestBankStatementUpload(t *testing.T) {
	imp := &bankImporterDouble{}
	h := NewHandler(Config{Logger: slog.New(slog.DiscardHandler), AdminTokens: []string{"alice=a-secret"},
		APITokens: []string{"r-secret"}, BankStatements: imp})
	post := func(token, query, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/v1/bank-statements"+query, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	good := "date,amount,currency,reference\n2026-03-03,100.00,EUR,B-1\n"
	rec := post("a-secret", "?account=main", good)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var sum BankImportSummary
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &sum))
	assert.Equal(t, BankImportSummary{Format: "csv", Lines: 1, New: 1}, sum)
	assert.Equal(t, "main", imp.account)

	rec = post("a-secret", "?account=main", "date,amount,currency,reference\n2026-03-03,1.001,EUR,B-1\n")
	assert.Equal(t, http.StatusBadRequest, rec.Code)
	assert.Contains(t, rec.Body.String(), "line 2, field amount", "the answer names line and field")

	rec = post("a-secret", "", good)
	assert.Equal(t, http.StatusBadRequest, rec.Code, "no account")
	rec = post("a-secret", "?account=bad:name", good)
	assert.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
	rec = post("r-secret", "?account=main", good)
	assert.Equal(t, http.StatusForbidden, rec.Code, "a read token does not import")
}
