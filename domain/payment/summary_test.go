package payment

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSummaryStatus(t *testing.T) {
	cases := []struct {
		s    Summary
		want string
	}{
		{Summary{}, StatusPending},
		{Summary{RefundsPending: 100}, StatusPending},
		{Summary{Authorized: 1000}, StatusAuthorized},
		{Summary{Authorized: 1000, Failed: true}, StatusFailed},
		{Summary{Authorized: 1000, Canceled: true}, StatusCanceled},
		{Summary{Failed: true, Canceled: true}, StatusCanceled},
		{Summary{Captured: 1000, Failed: true}, StatusCaptured},
		{Summary{Authorized: 1000, Captured: 1000}, StatusCaptured},
		{Summary{Captured: 1000, Refunded: 300}, StatusPartiallyRefunded},
		{Summary{Captured: 1000, Refunded: 1000}, StatusRefunded},
		{Summary{Captured: 1000, Refunded: 1200}, StatusRefunded},
		{Summary{Captured: 1000, DisputeOpen: 1000}, StatusDisputed},
		{Summary{Captured: 1000, DisputeOpen: 500, DisputeLost: 500}, StatusDisputed},
		{Summary{Captured: 1000, DisputeLost: 1000}, StatusDisputeLost},
		{Summary{Captured: 1000, Refunded: 1000, DisputeLost: 10}, StatusDisputeLost},
		{Summary{DisputeOpen: 10}, StatusDisputed},
	}
	for _, tc := range cases {
		assert.Equalf(t, tc.want, tc.s.Status(), "%+v: status", tc.s)
	}
}

func TestSummaryApply(t *testing.T) {
	m := Meta{Provider: "stripe", DedupKey: "k"}
	var s Summary
	steps := []struct {
		e    Event
		want Summary
	}{
		{RefundPending{Meta: m, RefundID: "r1", Amount: 100, Currency: "USD"},
			Summary{Currency: "USD", RefundsPending: 100}},
		{Authorized{Meta: m, Amount: 1000, Currency: "USD"},
			Summary{Currency: "USD", RefundsPending: 100, Authorized: 1000}},
		{Captured{Meta: m, CaptureID: "c", Amount: 1000, Fee: 30, Currency: "USD"},
			Summary{Currency: "USD", RefundsPending: 100, Authorized: 1000, Captured: 1000, Fees: 30}},
		{FeeRecorded{Meta: m, CaptureID: "c", Fee: 0, Currency: "USD"},
			Summary{Currency: "USD", RefundsPending: 100, Authorized: 1000, Captured: 1000, Fees: 30}},
		{RefundPosted{Meta: m, RefundID: "r1", Amount: 100, Currency: "USD", WasPending: true},
			Summary{Currency: "USD", Authorized: 1000, Captured: 1000, Fees: 30, Refunded: 100}},
		{RefundPosted{Meta: m, RefundID: "r2", Amount: 50, Currency: "USD"},
			Summary{Currency: "USD", Authorized: 1000, Captured: 1000, Fees: 30, Refunded: 150}},
		{RefundReversed{Meta: m, RefundID: "r2", Amount: 50, Currency: "USD"},
			Summary{Currency: "USD", Authorized: 1000, Captured: 1000, Fees: 30, Refunded: 100}},
		{RefundPending{Meta: m, RefundID: "r3", Amount: 7, Currency: "USD"},
			Summary{Currency: "USD", Authorized: 1000, Captured: 1000, Fees: 30, Refunded: 100, RefundsPending: 7}},
		{RefundReversed{Meta: m, RefundID: "r3", Amount: 7, Currency: "USD", WasPending: true},
			Summary{Currency: "USD", Authorized: 1000, Captured: 1000, Fees: 30, Refunded: 100}},
		{DisputeOpened{Meta: m, DisputeID: "d1", Amount: 400, Currency: "USD"},
			Summary{Currency: "USD", Authorized: 1000, Captured: 1000, Fees: 30, Refunded: 100, DisputeOpen: 400}},
		{DisputeLost{Meta: m, DisputeID: "d1", Amount: 400, Currency: "USD"},
			Summary{Currency: "USD", Authorized: 1000, Captured: 1000, Fees: 30, Refunded: 100, DisputeLost: 400}},
		{DisputeOpened{Meta: m, DisputeID: "d2", Amount: 10, Currency: "USD"},
			Summary{Currency: "USD", Authorized: 1000, Captured: 1000, Fees: 30, Refunded: 100, DisputeLost: 400, DisputeOpen: 10}},
		{DisputeWon{Meta: m, DisputeID: "d2", Amount: 10, Currency: "USD"},
			Summary{Currency: "USD", Authorized: 1000, Captured: 1000, Fees: 30, Refunded: 100, DisputeLost: 400}},
		{Flagged{Meta: m, Kind: ReconOverRefund}, Summary{Currency: "USD", Authorized: 1000, Captured: 1000, Fees: 30, Refunded: 100, DisputeLost: 400}},
		{Failed{Meta: m}, Summary{Currency: "USD", Authorized: 1000, Captured: 1000, Fees: 30, Refunded: 100, DisputeLost: 400, Failed: true}},
		{Canceled{Meta: m}, Summary{Currency: "USD", Authorized: 1000, Captured: 1000, Fees: 30, Refunded: 100, DisputeLost: 400, Failed: true, Canceled: true}},
	}
	for i, st := range steps {
		s.Apply(st.e)
		require.Equalf(t, st.want, s, "step %d (%s)", i, st.e.Type())
	}
	require.Equal(t, StatusDisputeLost, s.Status(), "status")
}

func TestSummaryLateFeeAndLossAfterWin(t *testing.T) {
	m := Meta{Provider: "adyen", DedupKey: "k"}
	var late, plain Summary
	for _, e := range []Event{
		Captured{Meta: m, CaptureID: "c", Amount: 1000, Currency: "EUR"},
		FeeRecorded{Meta: m, CaptureID: "c", Fee: 117, Currency: "EUR"},
		DisputeOpened{Meta: m, DisputeID: "d", Amount: 400, Currency: "EUR"},
		DisputeWon{Meta: m, DisputeID: "d", Amount: 400, Currency: "EUR"},
		DisputeLost{Meta: m, DisputeID: "d", Amount: 400, Currency: "EUR", ReversesWin: true},
	} {
		late.Apply(e)
	}
	for _, e := range []Event{
		Captured{Meta: m, CaptureID: "c", Amount: 1000, Fee: 117, Currency: "EUR"},
		DisputeOpened{Meta: m, DisputeID: "d", Amount: 400, Currency: "EUR"},
		DisputeLost{Meta: m, DisputeID: "d", Amount: 400, Currency: "EUR"},
	} {
		plain.Apply(e)
	}
	want := Summary{Currency: "EUR", Captured: 1000, Fees: 117, DisputeLost: 400}
	require.Equal(t, want, late, "late")
	require.Equal(t, want, plain, "plain")
	require.Equal(t, StatusDisputeLost, late.Status(), "status")
}

// The sub-merchant is the first capture's that names one: a later capture
// without one (a settlement line) does not erase it.
func TestSummarySubMerchant(t *testing.T) {
	var s Summary
	s.Apply(Captured{CaptureID: "4200", Amount: 100, Currency: "CNY", SubMerchant: "1900000201"})
	s.Apply(Captured{CaptureID: "4201", Amount: 100, Currency: "CNY"})
	assert.Equal(t, "1900000201", s.SubMerchant)
	var direct Summary
	direct.Apply(Captured{CaptureID: "4202", Amount: 100, Currency: "CNY"})
	assert.Empty(t, direct.SubMerchant)
}
