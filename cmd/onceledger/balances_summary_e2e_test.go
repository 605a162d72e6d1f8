package main_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// POST /v1/settlements/stripe?timezone= takes a balance summary report in
// the report run's zone: its two balances per currency are assertions as
// of that zone's day boundaries; a zone that does not exist is 400.
func TestBalanceSummaryUpload(t *testing.T) {
	s := settleStack(t, onPostgres)
	file := []byte("category,description,net_amount,currency\n" +
		"starting_balance,Starting balance (2026-11-01),0.00,usd\n" +
		"ending_balance,Ending balance (2026-11-30),0.00,usd\n")
	ans := s.v1(http.MethodPost, "/v1/settlements/stripe?timezone=Nowhere/Else", file)
	assert.Equal(t, http.StatusBadRequest, ans.Status, ans.Body)
	ans = s.v1(http.MethodPost, "/v1/settlements/stripe?timezone=Asia/Shanghai", file)
	require.Equal(t, http.StatusOK, ans.Status, ans.Body)
	s.projectedToHead()
	got := s.statedBalances("stripe", "")
	require.Len(t, got, 2)
	sh := time.FixedZone("CST", 8*3600)
	assert.Equal(t, time.Date(2026, 11, 1, 0, 0, 0, 0, sh).Add(-time.Microsecond).UTC(), got[0].AsOf.UTC())
	assert.Equal(t, time.Date(2026, 12, 1, 0, 0, 0, 0, sh).Add(-time.Microsecond).UTC(), got[1].AsOf.UTC())
	assert.Equal(t, "agreed", got[0].Status, "nothing booked, nothing stated")
}

// The project's PayPal STL sample states its Beginning and Ending Balance
// per currency in its report footer (RF): imported alone, its rows net to
// the balances it states, so every assertion agrees and no item opens. The
// same file stating another ending balance opens exactly one
// balance_mismatch, for the account and currency it names.
func TestPaypalSTLBalancesAreAssertions(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "samples", "STL-20261130.01.009.CSV"))
	require.NoError(t, err)
	s := propStack(t, onPostgres)
	ans := s.v1(http.MethodPost, "/v1/settlements/paypal", raw)
	require.Equal(t, http.StatusOK, ans.Status, ans.Body)
	s.projectedToHead()
	got := s.statedBalances("paypal", "")
	require.Len(t, got, 4, "beginning and ending balance, USD and EUR")
	for _, b := range got {
		assert.Equal(t, "agreed", b.Status, "%+v", b)
	}
	assert.Empty(t, s.openItems("balance_mismatch"))

	changed := bytes.Replace(raw, []byte(`"RF","USD",6207,4148,20,2079,"CR",0,"CR",0,`), []byte(`"RF","USD",6207,4148,20,2079,"CR",0,"CR",100,`), 1)
	require.NotEqual(t, raw, changed)
	s = propStack(t, onPostgres)
	ans = s.v1(http.MethodPost, "/v1/settlements/paypal", changed)
	require.Equal(t, http.StatusOK, ans.Status, ans.Body)
	s.projectedToHead()
	differs := s.statedBalances("paypal", "differs")
	require.Len(t, differs, 1)
	assert.Equal(t, int64(-100), differs[0].Difference, "the ledger's 0 less the stated 1.00")
	assert.Equal(t, []string{"provider:paypal:balance/USD"}, s.openItems("balance_mismatch"))
}
