package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/domain/delivery"
)

// The search finds a payment by any id a provider gives it: its own, a
// capture's, a refund's, a dispute's. One hit redirects to the payment,
// several are listed with the kind of id each matched, none says so.
func TestConsoleSearchByAnyProviderID(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	n := seq.Add(1)
	pay, other := fmt.Sprintf("pay_search_%d", n), fmt.Sprintf("pay_search_other_%d", n)
	capID, refID, dispID, shared := fmt.Sprintf("cap_s_%d", n), fmt.Sprintf("re_s_%d", n), fmt.Sprintf("dp_s_%d", n), fmt.Sprintf("cap_shared_%d", n)
	require.Equal(t, ingest.Accepted, f.deliver("msg_s1_"+pay, "payment.captured",
		map[string]any{"payment_id": pay, "capture_id": capID, "amount": 5000, "currency": "USD"}))
	require.Equal(t, ingest.Accepted, f.deliver("msg_s2_"+pay, "refund.succeeded",
		map[string]any{"payment_id": pay, "refund_id": refID, "amount": 1000, "currency": "USD"}))
	require.Equal(t, ingest.Accepted, f.deliver("msg_s3_"+pay, "dispute.opened",
		map[string]any{"payment_id": pay, "dispute_id": dispID, "amount": 1000, "currency": "USD"}))
	// Two payments whose captures carry the same id (two providers' ids
	// can coincide; here one provider's, for the test).
	require.Equal(t, ingest.Accepted, f.deliver("msg_s4_"+pay, "payment.captured",
		map[string]any{"payment_id": pay, "capture_id": shared, "amount": 100, "currency": "USD"}))
	require.Equal(t, ingest.Accepted, f.deliver("msg_s5_"+other, "payment.captured",
		map[string]any{"payment_id": other, "capture_id": shared, "amount": 100, "currency": "USD"}))
	// An Alipay trade, named by the merchant's order (out_trade_no): the
	// reference its notification carried, recorded with its events.
	trade, order := fmt.Sprintf("20261129220014%010d", n), fmt.Sprintf("order-%d", n)
	res, err := f.svc.Ingest(t.Context(), delivery.Event{Provider: "alipay", DedupKey: "notify_" + trade, Type: "TRADE_SUCCESS",
		PaymentKey: trade, OccurredAt: time.Now(), PayloadHash: "sha-" + trade, Raw: []byte("trade_no=" + trade),
		Facts:      []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: trade, Amount: 8800, Currency: "CNY"}},
		References: []string{order}})
	require.NoError(t, err)
	require.Equal(t, ingest.Accepted, res.Outcome)
	f.waitProjected()

	c := f.client()
	require.Equal(t, http.StatusOK, c.signIn(readToken).status)
	c.hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, id := range []string{pay, capID, refID, dispID} {
		r := c.get("/console/search?q=" + url.QueryEscape(id))
		require.Equal(t, http.StatusSeeOther, r.status, id)
		assert.Equal(t, "/console/payments/standard/"+pay, r.header.Get("Location"), id)
	}
	r := c.get("/console/search?q=" + order)
	require.Equal(t, http.StatusSeeOther, r.status, order)
	assert.Equal(t, "/console/payments/alipay/"+trade, r.header.Get("Location"))

	r = c.get("/console/search?q=" + shared)
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, r.body, `id="search-hits"`)
	assert.Contains(t, r.body, "/console/payments/standard/"+pay+`"`)
	assert.Contains(t, r.body, "/console/payments/standard/"+other+`"`)
	assert.Contains(t, r.body, "<td>capture</td>")

	r = c.get("/console/search?q=nope_" + pay)
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, r.body, `id="search-none"`)
	r = c.get("/console/search")
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, r.body, "Type the id")
	assert.Contains(t, c.get("/console/payments").body, `action="/console/search"`, "the payments list has the search box")
}
