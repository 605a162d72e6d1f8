package main_test

import (
	"net/http"
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
