package httpapi

import (
	"context"
	"encoding/csv"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/projections/views"
)

// payoutStore answers the settlement queries from a fixed payout.
type payoutStore struct {
	p     views.Payout
	lines []views.SettlementLine
}

func (s payoutStore) Payouts(_ context.Context, _ views.PayoutFilter, fn func(views.Payout) error) error {
	return fn(s.p)
}

func (s payoutStore) Payout(_ context.Context, provider, id string) (views.Payout, bool, error) {
	return s.p, provider == s.p.Provider && id == s.p.PayoutID, nil
}

func (s payoutStore) SettlementLines(_ context.Context, _, _ string, fn func(views.SettlementLine) error) error {
	for _, l := range s.lines {
		if err := fn(l); err != nil {
			return err
		}
	}
	return nil
}

func payoutHandler() http.Handler {
	at := time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
	st := payoutStore{
		p: views.Payout{Provider: "adyen", PayoutID: "Merchant/41/EUR", Amount: -4000, Currency: "EUR",
			Status: "mismatch", LineCount: 1, LinesNet: -3000, Difference: 1000, ArrivalDate: at, UpdatedAt: at},
		lines: []views.SettlementLine{{LineKey: "k1", Kind: "fee", Gross: -3000, Net: -3000, Currency: "EUR", OccurredAt: at}},
	}
	return NewHandler(Config{Logger: slog.New(slog.DiscardHandler), APITokens: []string{"reader=r-secret"},
		SettlementQuery: st})
}

func getV1(t *testing.T, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Header.Set("Authorization", "Bearer r-secret")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// Adyen payout ids hold '/' (merchant account / batch / currency): the
// payout answers for the escaped id, and for the id as it is.
func TestPayoutIDWithSlashes(t *testing.T) {
	h := payoutHandler()
	for _, target := range []string{"/v1/payouts/adyen/Merchant%2F41%2FEUR", "/v1/payouts/adyen/Merchant/41/EUR"} {
		rec := getV1(t, h, target)
		require.Equal(t, http.StatusOK, rec.Code, "%s: %s", target, rec.Body.String())
		assert.Contains(t, rec.Body.String(), `"payout_id":"Merchant/41/EUR"`, target)
	}
	assert.Equal(t, http.StatusNotFound, getV1(t, h, "/v1/payouts/adyen/Merchant%2F42%2FEUR").Code)
}

// Negative amounts stay numbers in the payout and line exports: an
// accountant sums them. Text cells are still neutralized.
func TestPayoutCSVAmountsAreNumbers(t *testing.T) {
	h := payoutHandler()
	rec := getV1(t, h, "/v1/payouts?format=csv")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	recs, err := csv.NewReader(strings.NewReader(rec.Body.String())).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 2)
	row := map[string]string{}
	for i, name := range recs[0] {
		row[name] = recs[1][i]
	}
	assert.Equal(t, "-4000", row["amount"])
	assert.Equal(t, "-40.00", row["amount_decimal"])
	assert.Equal(t, "1000", row["difference"])

	rec = getV1(t, h, "/v1/payouts/adyen/Merchant%2F41%2FEUR?format=csv")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	recs, err = csv.NewReader(strings.NewReader(rec.Body.String())).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 2)
	for i, name := range recs[0] {
		row[name] = recs[1][i]
	}
	assert.Equal(t, "-3000", row["gross"])
	assert.Equal(t, "-3000", row["net"])
}
