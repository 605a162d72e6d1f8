package httpapi

import (
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/projections/views"
)

// Issue 33, finding 8: a payout id holding "..", '/' or "%2F" (an Alipay
// withdrawal id) is reached by its escaped path: the router does not
// clean the decoded path and redirect elsewhere.
func TestPayoutIDsWithDotsAndSlashes(t *testing.T) {
	at := time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
	for target, id := range map[string]string{
		"/v1/payouts/alipay/2026%2F..%2FW1":     "2026/../W1",
		"/v1/payouts/alipay/..%2FW2":            "../W2",
		"/v1/payouts/alipay/%2E%2E":             "..",
		"/v1/payouts/alipay/a%2F.%2Fb":          "a/./b",
		"/v1/payouts/alipay/W%252F3":            "W%2F3",
		"/v1/payouts/alipay/2026%2F..%2F..%2FW": "2026/../../W",
	} {
		st := payoutStore{p: views.Payout{Provider: "alipay", PayoutID: id, Amount: 100, Currency: "CNY", Status: "reconciled",
			ArrivalDate: at, UpdatedAt: at}}
		h := NewHandler(Config{Logger: slog.New(slog.DiscardHandler), APITokens: []string{"reader=r-secret"}, SettlementQuery: st})
		rec := getV1(t, h, target)
		require.Equal(t, http.StatusOK, rec.Code, "%s: %s %v", target, rec.Body.String(), rec.Header())
		assert.Contains(t, rec.Body.String(), `"payout_id":"`+id+`"`, target)
	}
}
