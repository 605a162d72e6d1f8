package main_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/domain/payment"
)

// ipnChargebackBody is a PayPal IPN chargeback of 3.00 of capture parent:
// payment_status Reversed, reason_code chargeback, parent_txn_id the
// capture (PayPal reports the reversal negative).
func ipnChargebackBody(txn, parent string) []byte {
	return []byte("mc_gross=-3.00&payment_date=09%3A15%3A02+Jan+15%2C+2026+PST&payment_status=Reversed" +
		"&charset=UTF-8&mc_fee=0.00&parent_txn_id=" + parent + "&txn_id=" + txn + "&reason_code=chargeback" +
		"&receiver_email=seller%40onceledger.example&mc_currency=USD&test_ipn=1&ipn_track_id=e1f2a3b4c5d6")
}

// A chargeback PayPal reports on both channels, a REST
// CUSTOMER.DISPUTE.CREATED (3.00) and a VERIFIED IPN Reversed naming the
// capture as its parent, is one dispute in either order: the dispute
// receivable holds 3.00, not 6.00 (issue 24, item 1).
func TestPayPalChargebackOnBothChannelsPostsOnce(t *testing.T) {
	s := newProviderStack(t, pgtest.NewDatabase(t))
	v := newVerifyServer(t, "VERIFIED")
	w := ipnWorker(s, v, time.Second)
	for _, restFirst := range []bool{true, false} {
		pay := uniq("CAP")
		stream := paypalE2E.stream(pay)
		require.Equal(t, http.StatusOK, paypalE2E.send(s, paypalCapture(t, pay, 1000, 59)).Status)
		rest := func() {
			a := paypalE2E.send(s, paypalDispute("CUSTOMER.DISPUTE.CREATED", pay, uniq("PP-D-"), 300, ""))
			require.Equal(t, http.StatusOK, a.Status, a.Body)
		}
		ipn := func() {
			requireIPNStored(t, s.postIPN(ipnChargebackBody(uniq("REV"), pay)))
			require.Equal(t, 1, once(t, w))
		}
		if restFirst {
			rest()
			ipn()
		} else {
			ipn()
			rest()
		}
		assert.Equal(t, map[string]int64{
			"provider:paypal:balance USD":    1000 - 59 - 300,
			"expenses:fees:paypal USD":       59,
			"revenue:sales USD":              -1000,
			"receivable:disputes:paypal USD": 300,
		}, s.balances(stream), "REST first: %v", restFirst)
		assert.Equal(t, 1, countTypes(s.streamTypes(stream))[payment.TypeDisputeOpened], "REST first: %v", restFirst)
	}
}
