package payment

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/onceledger/onceledger/domain/ledger"
)

func TestPostings(t *testing.T) {
	m := Meta{Provider: "adyen", PaymentKey: "psp_1", DedupKey: "k"}
	bal, fees, recv := "provider:adyen:balance", "expenses:fees:adyen", "receivable:disputes:adyen"
	type P = ledger.Posting
	eur := func(account string, amount int64) P { return P{Account: account, Currency: "EUR", Amount: amount} }
	cases := []struct {
		e    Event
		want []P
	}{
		{Captured{Meta: m, CaptureID: "c", Amount: 1000, Fee: 30, Currency: "EUR"},
			[]P{eur(bal, 970), eur(fees, 30), eur("revenue:sales", -1000)}},
		{Captured{Meta: m, CaptureID: "c", Amount: 1000, Currency: "EUR"},
			[]P{eur(bal, 1000), eur("revenue:sales", -1000)}},
		{Captured{Meta: m, CaptureID: "c", Amount: 30, Fee: 30, Currency: "EUR"},
			[]P{eur(fees, 30), eur("revenue:sales", -30)}},
		{FeeRecorded{Meta: m, CaptureID: "c", Fee: 117, Currency: "EUR"},
			[]P{eur(fees, 117), eur(bal, -117)}},
		{RefundPosted{Meta: m, RefundID: "r", Amount: 200, Currency: "EUR"},
			[]P{eur("revenue:refunds", 200), eur(bal, -200)}},
		{RefundPosted{Meta: m, RefundID: "r", Amount: 200, Currency: "EUR", WasPending: true},
			[]P{eur("revenue:refunds", 200), eur(bal, -200)}},
		{RefundReversed{Meta: m, RefundID: "r", Amount: 200, Currency: "EUR"},
			[]P{eur(bal, 200), eur("revenue:refunds", -200)}},
		{RefundReversed{Meta: m, RefundID: "r", Amount: 200, Currency: "EUR", WasPending: true}, nil},
		{DisputeOpened{Meta: m, DisputeID: "d", Amount: 500, Currency: "EUR"},
			[]P{eur(recv, 500), eur(bal, -500)}},
		{DisputeWon{Meta: m, DisputeID: "d", Amount: 500, Currency: "EUR"},
			[]P{eur(bal, 500), eur(recv, -500)}},
		{DisputeLost{Meta: m, DisputeID: "d", Amount: 500, Currency: "EUR"},
			[]P{eur("expenses:disputes", 500), eur(recv, -500)}},
		{DisputeLost{Meta: m, DisputeID: "d", Amount: 500, Currency: "EUR", ReversesWin: true},
			[]P{eur("expenses:disputes", 500), eur(bal, -500)}},
		{PayoutPaid{Meta: m, PayoutID: "p", Amount: 9000, Currency: "EUR"},
			[]P{eur("bank:payouts", 9000), eur(bal, -9000)}},
		{Authorized{Meta: m, Amount: 1000, Currency: "EUR"}, nil},
		{Failed{Meta: m}, nil},
		{Canceled{Meta: m}, nil},
		{RefundPending{Meta: m, RefundID: "r", Amount: 200, Currency: "EUR"}, nil},
		{Flagged{Meta: m, Kind: ReconOverRefund, Key: "refunds"}, nil},
		{Cleared{Meta: m, Kind: ReconOverRefund, Key: "refunds"}, nil},
	}
	for _, tc := range cases {
		got := Postings(tc.e)
		assert.Equalf(t, tc.want, got, "%s %+v: postings", tc.e.Type(), tc.e)
		assert.NoErrorf(t, ledger.Check(got), "%s", tc.e.Type())
	}
}
