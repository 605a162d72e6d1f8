package paypal

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
	"github.com/onceledger/onceledger/adapters/providers/paypalipn"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/payment"
)

// ipnMessage returns an IPN form, as PayPal documents its variables, for the
// REST fixtures' capture 42311647XV020574X: PayPal's txn_id for a payment is
// the REST capture id, and a refund's txn_id the REST refund id.
func ipnMessage(status, txn, parent, gross, fee string) []byte {
	v := []string{
		"mc_gross=" + gross, "payment_status=" + status, "charset=UTF-8", "mc_fee=" + fee,
		"payment_date=02%3A00%3A03+Nov+29%2C+2026+PST", "txn_id=" + txn, "mc_currency=USD",
		"receiver_email=seller%40onceledger.example", "txn_type=web_accept", "ipn_track_id=a1b2c3" + txn[:4],
	}
	if parent != "" {
		v = append(v, "parent_txn_id="+parent, "reason_code=refund")
	}
	return []byte(strings.Join(v, "&"))
}

// PayPal reports one capture and its refund on both channels (merchants
// moving from IPN to webhooks run both). Whatever the order, the capture and
// the refund are recorded once, on one stream, in provider:paypal accounts.
func TestRESTAndIPNAreOneProvider(t *testing.T) {
	s := testSigners(t)
	rest := adapter(t, s[0].certPEM)
	ipn, err := paypalipn.New([]string{"seller@onceledger.example"})
	require.NoError(t, err)

	var deliveries []delivery.Event
	for _, f := range []string{"capture_completed.json", "capture_refunded.json"} {
		body := providertest.Fixture(t, f)
		evs, err := rest.Parse(providers.Request{Header: signed(t, s[0], body, now), Body: body, Now: now})
		require.NoError(t, err, f)
		deliveries = append(deliveries, evs...)
	}
	for _, body := range [][]byte{
		ipnMessage("Completed", "42311647XV020574X", "", "10.00", "0.79"),
		ipnMessage("Refunded", "1Y107995YT783435V", "42311647XV020574X", "-2.50", "-0.07"),
	} {
		evs, err := ipn.Parse(providers.Request{Body: body, Now: now})
		require.NoError(t, err)
		deliveries = append(deliveries, evs...)
	}
	for _, ev := range deliveries {
		assert.Equal(t, "payment-paypal-42311647XV020574X", ev.StreamID(), ev.DedupKey)
	}
	assert.True(t, strings.HasPrefix(deliveries[2].DedupKey, "ipn:"), "IPN keys never meet REST ids")

	// REST first, IPN first, interleaved.
	for _, order := range [][]int{{0, 1, 2, 3}, {2, 3, 0, 1}, {3, 0, 2, 1}, {1, 3, 2, 0}} {
		var history []payment.Event
		for _, i := range order {
			out, err := payment.Decide(history, deliveries[i])
			require.NoError(t, err)
			history = append(history, out...)
		}
		captures, refunds := 0, 0
		balances := map[string]int64{}
		for _, e := range history {
			switch e.(type) {
			case payment.Captured:
				captures++
			case payment.RefundPosted:
				refunds++
			}
			for _, p := range payment.Postings(e) {
				balances[p.Account] += p.Amount
			}
		}
		assert.Equal(t, 1, captures, "order %v", order)
		assert.Equal(t, 1, refunds, "order %v", order)
		assert.Equal(t, map[string]int64{
			ledger.ProviderBalance("paypal"): 1000 - 79 - 250,
			ledger.ProviderFees("paypal"):    79,
			ledger.RevenueSales:              -1000,
			ledger.RevenueRefunds:            250,
		}, balances, "order %v", order)
	}
}

// A PayPal dispute holds the amount when it opens and releases it when
// resolved in the seller's favour.
func TestPayPalDisputeHoldAndRelease(t *testing.T) {
	s := testSigners(t)
	a := adapter(t, s[0].certPEM)
	var history []payment.Event
	receivable := func() int64 {
		var sum int64
		for _, e := range history {
			for _, p := range payment.Postings(e) {
				if p.Account == ledger.DisputeReceivable("paypal") {
					sum += p.Amount
				}
			}
		}
		return sum
	}
	for _, f := range []string{"capture_completed.json", "dispute_created.json", "dispute_resolved_seller.json"} {
		body := providertest.Fixture(t, f)
		evs, err := a.Parse(providers.Request{Header: signed(t, s[0], body, now), Body: body, Now: now})
		require.NoError(t, err, f)
		out, err := payment.Decide(history, evs[0])
		require.NoError(t, err, f)
		history = append(history, out...)
		if f == "dispute_created.json" {
			assert.Equal(t, int64(1000), receivable(), "held")
		}
	}
	assert.Zero(t, receivable(), "released")
}

// ipnReversal is a VERIFIED-to-be IPN chargeback of the fixtures' capture:
// payment_status Reversed, reason_code chargeback, parent_txn_id the capture.
func ipnReversal(status, txn, gross string) []byte {
	return []byte(strings.Join([]string{
		"mc_gross=" + gross, "payment_status=" + status, "charset=UTF-8", "mc_fee=0.00",
		"payment_date=02%3A00%3A03+Dec+01%2C+2026+PST", "txn_id=" + txn, "parent_txn_id=42311647XV020574X",
		"reason_code=chargeback", "mc_currency=USD", "receiver_email=seller%40onceledger.example",
	}, "&"))
}

func disputeLedger(history []payment.Event) (opened int, receivable int64) {
	for _, e := range history {
		if _, ok := e.(payment.DisputeOpened); ok {
			opened++
		}
		for _, p := range payment.Postings(e) {
			if p.Account == ledger.DisputeReceivable("paypal") {
				receivable += p.Amount
			}
		}
	}
	return opened, receivable
}

// A chargeback PayPal reports on both channels (REST CUSTOMER.DISPUTE.CREATED
// and an IPN Reversed naming the capture as parent) is one dispute, in
// either order: both channels derive its id from the disputed capture.
func TestPayPalChargebackOnBothChannelsIsOneDispute(t *testing.T) {
	s := testSigners(t)
	rest := adapter(t, s[0].certPEM)
	ipn, err := paypalipn.New([]string{"seller@onceledger.example"})
	require.NoError(t, err)
	parse := func(body []byte, signedREST bool) delivery.Event {
		var evs []delivery.Event
		var err error
		if signedREST {
			evs, err = rest.Parse(providers.Request{Header: signed(t, s[0], body, now), Body: body, Now: now})
		} else {
			evs, err = ipn.Parse(providers.Request{Body: body, Now: now})
		}
		require.NoError(t, err)
		require.Len(t, evs, 1)
		return evs[0]
	}
	capture := parse(providertest.Fixture(t, "capture_completed.json"), true)
	restDispute := parse(providertest.Fixture(t, "dispute_created.json"), true)
	ipnDispute := parse(ipnReversal("Reversed", "8BA40285PP9182419", "-10.00"), false)
	ipnWon := parse(ipnReversal("Canceled_Reversal", "5XY40285PP9182419", "10.00"), false)
	restWon := parse(providertest.Fixture(t, "dispute_resolved_seller.json"), true)
	require.Equal(t, restDispute.Facts[0].BusinessID, ipnDispute.Facts[0].BusinessID, "one id on both channels")
	require.Equal(t, DisputeID("42311647XV020574X"), ipnDispute.Facts[0].BusinessID)

	for name, order := range map[string][]delivery.Event{
		"REST first":         {capture, restDispute, ipnDispute},
		"IPN first":          {capture, ipnDispute, restDispute},
		"before the capture": {ipnDispute, restDispute, capture},
		"won on both":        {capture, restDispute, ipnDispute, ipnWon, restWon},
		"won, then reported": {capture, ipnDispute, restWon, restDispute, ipnWon},
	} {
		var history []payment.Event
		for _, ev := range order {
			out, err := payment.Decide(history, ev)
			require.NoError(t, err, name)
			history = append(history, out...)
		}
		opened, receivable := disputeLedger(history)
		assert.LessOrEqual(t, opened, 1, name)
		want := int64(1000)
		if strings.HasPrefix(name, "won") {
			want = 0
		}
		assert.Equal(t, want, receivable, name)
	}
}

// Keys that change keep old data right: a REST dispute recorded before its
// business id was derived from the capture (under its PP-D-… dispute id)
// stays one dispute. PayPal redelivering the stored webhook is a plain
// duplicate in the inbox (same facts hash) and adds nothing; its resolution,
// normalized now, resolves the dispute recorded under the old id.
func TestPayPalDisputeRecordedUnderTheOldIDStaysOne(t *testing.T) {
	s := testSigners(t)
	rest := adapter(t, s[0].certPEM)
	parse := func(f string) delivery.Event {
		body := providertest.Fixture(t, f)
		evs, err := rest.Parse(providers.Request{Header: signed(t, s[0], body, now), Body: body, Now: now})
		require.NoError(t, err)
		return evs[0]
	}
	capture, created, lost := parse("capture_completed.json"), parse("dispute_created.json"), parse("dispute_resolved_buyer.json")
	old := created
	old.Facts = []delivery.Fact{created.Facts[0]}
	old.Facts[0].BusinessID, old.Facts[0].LegacyID = "PP-D-27803", "" // as normalized before
	assert.Equal(t, old.FactsHash(), created.FactsHash(), "a redelivery of the stored webhook is a duplicate")

	var history []payment.Event
	for _, ev := range []delivery.Event{capture, old, created, lost} {
		out, err := payment.Decide(history, ev)
		require.NoError(t, err)
		history = append(history, out...)
	}
	opened, receivable := disputeLedger(history)
	assert.Equal(t, 1, opened)
	assert.Zero(t, receivable, "the loss moved the one dispute out of the receivable")
	var lostIDs []string
	for _, e := range history {
		if l, ok := e.(payment.DisputeLost); ok {
			lostIDs = append(lostIDs, l.DisputeID)
		}
	}
	assert.Equal(t, []string{"PP-D-27803"}, lostIDs, "the stored dispute keeps its id")
}
