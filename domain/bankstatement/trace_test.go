package bankstatement_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/onceledger/onceledger/domain/bankstatement"
	"github.com/onceledger/onceledger/domain/ledger"
)

// traced is a Stripe payout with its trace id and statement descriptor.
func traced(id string, amount int64, arrival, trace, descriptor string) bankstatement.Input {
	in := payout("stripe", id, amount, arrival)
	in.Payout.TraceID, in.Payout.Descriptor = trace, descriptor
	return in
}

// bankedBy returns the line that banked a Stripe payout ("" when none).
func (a *account) bankedBy(id string) string {
	l, _ := a.s.Banked("stripe", id)
	return l
}

// TestTraceIDPicksItsPayout: two payouts of one amount and arrival date;
// a line naming only the second's trace id banks the second, though the
// documented tie-break (the lowest id) would pick the first.
func TestTraceIDPicksItsPayout(t *testing.T) {
	a := newAccount(t)
	a.deliver(traced("po_A", 5000, "2026-03-02", "091000010000001", ""))
	a.deliver(traced("po_B", 5000, "2026-03-02", "091000010000002", ""))
	evs := a.deliver(line("ref:1", 5000, "2026-03-03", "ACH CREDIT TRACE 091000010000002"))
	b := evs[0].(bankstatement.LineBooked)
	require.Len(t, b.Payouts, 1)
	assert.Equal(t, "po_B", b.Payouts[0].ID)
	assert.Equal(t, bankstatement.ByTraceID, b.By)
	assert.Equal(t, "", a.bankedBy("po_A"))

	// The trace id in the line's reference (not its text) counts too.
	c := newAccount(t)
	c.deliver(traced("po_A", 5000, "2026-03-02", "091000010000001", ""))
	c.deliver(traced("po_B", 5000, "2026-03-02", "091000010000002", ""))
	in := line("ref:1", 5000, "2026-03-03", "STRIPE TRANSFER")
	in.Line.Reference = "091000010000002"
	c.deliver(in)
	assert.Equal(t, "ref:1", c.bankedBy("po_B"))
}

// TestDescriptorBreaksTie: a statement descriptor is not unique, so it
// only narrows equal candidates; Stripe truncates it to 10 characters on
// US ACH payouts, so the first 10 count.
func TestDescriptorBreaksTie(t *testing.T) {
	a := newAccount(t)
	a.deliver(traced("po_A", 5000, "2026-03-02", "", "ACME SHOP"))
	a.deliver(traced("po_B", 5000, "2026-03-02", "", "ACMECORPWEEKLY"))
	evs := a.deliver(line("ref:1", 5000, "2026-03-03", "STRIPE ACMECORPWE"))
	b := evs[0].(bankstatement.LineBooked)
	assert.Equal(t, "po_B", b.Payouts[0].ID)
	assert.Equal(t, bankstatement.ByDescriptor, b.By)
	// A descriptor never beats a trace id or the payout's id, and never
	// matches another amount.
	a.deliver(traced("po_C", 7000, "2026-03-02", "", "ACME SHOP"))
	a.deliver(traced("po_D", 7000, "2026-03-02", "T-00000000042", "OTHER"))
	evs = a.deliver(line("ref:2", 7000, "2026-03-03", "ACME SHOP T-00000000042"))
	assert.Equal(t, "po_D", evs[0].(bankstatement.LineBooked).Payouts[0].ID)
	evs = a.deliver(line("ref:3", 6000, "2026-03-03", "ACME SHOP"))
	assert.False(t, evs[0].(bankstatement.LineBooked).Matched())
}

// TestTraceIDOrderIndependent: whatever order the statement, the payouts
// and their trace ids arrive in (Stripe fills trace_id in after
// payout.paid, "up to 10 days after arrival_date"), the line naming po_B's
// trace id ends banking po_B, and the plain line banks po_A.
func TestTraceIDOrderIndependent(t *testing.T) {
	const trace = "091000010000002"
	lineT := line("ref:T", 5000, "2026-03-03", "TRACE "+trace)
	plain := line("ref:P", 5000, "2026-03-03", "")
	pA := traced("po_A", 5000, "2026-03-02", "", "")
	pBbare := traced("po_B", 5000, "2026-03-02", "", "")
	pB := traced("po_B", 5000, "2026-03-02", trace, "")
	orders := map[string][]bankstatement.Input{
		"payouts first":                    {pA, pB, lineT, plain},
		"statement first":                  {lineT, plain, pA, pB},
		"statement first, plain first":     {plain, lineT, pA, pB},
		"statement between":                {pA, lineT, plain, pB},
		"trace id last":                    {pA, pBbare, lineT, plain, pB},
		"trace id last, plain line first":  {pBbare, pA, plain, lineT, pB},
		"statement first, trace id last":   {lineT, plain, pBbare, pA, pB},
		"one line, trace id last":          {lineT, pA, pBbare, pB, plain},
		"statement, B bare, A, trace, end": {plain, lineT, pBbare, pA, pB},
	}
	for name, order := range orders {
		t.Run(name, func(t *testing.T) {
			a := newAccount(t)
			for _, in := range order {
				a.deliver(in)
			}
			assert.Equal(t, "ref:T", a.bankedBy("po_B"))
			assert.Equal(t, "ref:P", a.bankedBy("po_A"))
			assert.Equal(t, int64(-10000), a.balances["bank:payouts"])
			assert.Equal(t, int64(0), a.balances["suspense:bank:main"])
			assert.Empty(t, a.open())
		})
	}
}

// TestTraceIDLateOneLine: one line naming po_B's trace id, banked by the
// tie-break to po_A before the trace id was known, moves to po_B; po_A
// waits again (and is not received once the statements cover its window).
func TestTraceIDLateOneLine(t *testing.T) {
	a := newAccount(t)
	a.deliver(traced("po_A", 5000, "2026-03-02", "", ""))
	a.deliver(traced("po_B", 5000, "2026-03-02", "", ""))
	a.deliver(line("ref:T", 5000, "2026-03-03", "TRACE 091000010000002"))
	require.Equal(t, "ref:T", a.bankedBy("po_A"), "the tie-break, for now")
	evs := a.deliver(traced("po_B", 5000, "2026-03-02", "091000010000002", ""))
	var moved bankstatement.LineRematched
	for _, e := range evs {
		if m, ok := e.(bankstatement.LineRematched); ok {
			moved = m
		}
	}
	assert.Equal(t, "ref:T", moved.LineKey)
	assert.Equal(t, "po_A", moved.From[0].ID)
	assert.Equal(t, "po_B", moved.To[0].ID)
	assert.Equal(t, "ref:T", a.bankedBy("po_B"))
	assert.Equal(t, "", a.bankedBy("po_A"))
	assert.Equal(t, int64(-5000), a.balances["bank:payouts"], "a move posts nothing")
	a.deliver(bankstatement.Input{Statement: &bankstatement.Statement{Format: "camt.053", Seq: 1, Covers: day("2026-03-20")}})
	assert.Contains(t, a.open(), "payout_not_received stripe/po_A")
	// A line matched by its trace id is final: it never moves.
	evs = a.deliver(traced("po_B", 5000, "2026-03-02", "091000010000002", ""))
	assert.Empty(t, evs)
}

// TestPropertyTraceIDsAnyOrder: payouts of one amount and arrival date,
// each with its own trace id told either with the payout or later (Stripe
// fills it in after payout.paid); one credit per payout, some naming their
// payout's trace id. In any order, some deliveries twice: every payout is
// banked, every line naming a trace id banks that payout, nothing waits
// in suspense and no item is open.
func TestPropertyTraceIDsAnyOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		arrival := day("2026-03-02")
		n := rapid.IntRange(2, 6).Draw(t, "payouts")
		var ds []bankstatement.Delivery
		names := map[string]string{} // line key: the payout its text names
		for i := 0; i < n; i++ {
			id, trace := fmt.Sprintf("po_%d", i), fmt.Sprintf("0910000100%05d", i)
			p := bankstatement.Payout{Provider: "stripe", ID: id, Amount: 5000, Currency: "EUR", ArrivalOn: arrival}
			if rapid.Bool().Draw(t, "late") {
				bare := p
				ds = append(ds, bankstatement.Delivery{DedupKey: "payout:" + id, Input: bankstatement.Input{Payout: &bare}})
			}
			withTrace := p
			withTrace.TraceID = trace
			ds = append(ds, bankstatement.Delivery{DedupKey: "payout:" + id + ":" + trace, Input: bankstatement.Input{Payout: &withTrace}})
			l := bankstatement.Line{Key: fmt.Sprintf("ref:%d", i), Amount: 5000, Currency: "EUR", Format: "camt.053",
				BookedOn: bankstatement.AddBusinessDays(arrival, rapid.IntRange(0, 3).Draw(t, "delay"))}
			if rapid.Bool().Draw(t, "names") {
				l.Text, names[l.Key] = "ACH TRACE "+trace, id
			}
			ds = append(ds, bankstatement.Delivery{DedupKey: "line:" + l.Key, Input: bankstatement.Input{Line: &l}})
		}
		order := rapid.Permutation(ds).Draw(t, "order")
		for _, i := range rapid.SliceOfN(rapid.IntRange(0, len(ds)-1), 0, 4).Draw(t, "again") {
			order = append(order, ds[i])
		}
		s := bankstatement.NewState("main", 5)
		bal := map[string]int64{ledger.BankPayouts: int64(n) * 5000}
		open := map[string]bool{}
		decideOnce(t, s, order, bal, open)
		require.Zero(t, bal[ledger.BankPayouts], "every payout banked")
		require.Zero(t, bal[bankstatement.Suspense("main")], "nothing in suspense")
		require.Empty(t, open)
		for key, id := range names {
			line, _ := s.Banked("stripe", id)
			require.Equal(t, key, line, "the line naming %s's trace id banks it", id)
		}
	})
}

// TestReturnedPayoutIsNotMoved: a payout the bank returned stays with the
// line that banked it, whatever is learned later.
func TestReturnedPayoutIsNotMoved(t *testing.T) {
	a := newAccount(t)
	a.deliver(traced("po_A", 5000, "2026-03-02", "", ""))
	a.deliver(line("ref:T", 5000, "2026-03-03", "TRACE 091000010000002"))
	rev := line("ref:back", -5000, "2026-03-04", "")
	rev.Line.Reversal = true
	a.deliver(rev)
	require.Contains(t, a.open(), "payout_returned stripe/po_A")
	a.deliver(traced("po_B", 5000, "2026-03-02", "091000010000002", ""))
	assert.Equal(t, "ref:T", a.bankedBy("po_A"), "the returned payout keeps its line")
	assert.Equal(t, "", a.bankedBy("po_B"))
}
