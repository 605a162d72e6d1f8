package bankstatement_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/bankstatement"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/payment"
)

func day(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

// account is a test account: it decides deliveries, keeps the events and
// sums their postings.
type account struct {
	t        *testing.T
	s        *bankstatement.State
	events   []payment.Event
	balances map[string]int64
	n        int
}

func newAccount(t *testing.T) *account {
	return &account{t: t, s: bankstatement.NewState("main", 5), balances: map[string]int64{}}
}

func (a *account) deliver(in bankstatement.Input) []payment.Event {
	a.t.Helper()
	a.n++
	evs, err := a.s.Decide(bankstatement.Delivery{DedupKey: "d" + string(rune('a'+a.n)), Input: in})
	require.NoError(a.t, err)
	for _, e := range evs {
		ps := payment.Postings(e)
		require.NoError(a.t, ledger.Check(ps))
		for _, p := range ps {
			a.balances[p.Account] += p.Amount
		}
		// every event survives its codec
		typ, data, err := payment.Encode(e)
		require.NoError(a.t, err)
		back, err := payment.Decode(typ, data)
		require.NoError(a.t, err)
		assert.Equal(a.t, e, back)
	}
	a.events = append(a.events, evs...)
	return evs
}

func (a *account) open() map[string]string {
	out := map[string]string{}
	for _, e := range a.events {
		switch e := e.(type) {
		case payment.Flagged:
			out[e.Kind+" "+e.Key] = e.Details
		case payment.Cleared:
			delete(out, e.Kind+" "+e.Key)
		}
	}
	return out
}

func payout(provider, id string, amount int64, arrival string) bankstatement.Input {
	return bankstatement.Input{Payout: &bankstatement.Payout{Provider: provider, ID: id, Amount: amount, Currency: "EUR", ArrivalOn: day(arrival)}}
}

func line(key string, amount int64, booked, text string) bankstatement.Input {
	return bankstatement.Input{Line: &bankstatement.Line{Key: key, Amount: amount, Currency: "EUR", BookedOn: day(booked), Text: text, Format: "csv"}}
}

func TestCreditMatchesItsPayout(t *testing.T) {
	a := newAccount(t)
	a.deliver(payout("stripe", "po_1", 10000, "2026-03-02"))
	evs := a.deliver(line("ref:L1", 10000, "2026-03-03", "STRIPE po_1"))
	require.Len(t, evs, 1)
	b := evs[0].(bankstatement.LineBooked)
	assert.Equal(t, []bankstatement.PayoutRef{{Provider: "stripe", ID: "po_1", Amount: 10000}}, b.Payouts)
	assert.Equal(t, int64(10000), a.balances["bank:main"])
	assert.Equal(t, int64(-10000), a.balances["bank:payouts"])
	assert.Empty(t, a.open())
}

func TestStatementBeforePayout(t *testing.T) {
	a := newAccount(t)
	a.deliver(line("ref:L1", 10000, "2026-03-03", ""))
	assert.Contains(t, a.open(), "unidentified_deposit ref:L1")
	assert.Equal(t, int64(-10000), a.balances["suspense:bank:main"])
	evs := a.deliver(payout("stripe", "po_1", 10000, "2026-03-02"))
	require.Len(t, evs, 3) // known, matched, cleared
	assert.Equal(t, int64(0), a.balances["suspense:bank:main"])
	assert.Equal(t, int64(-10000), a.balances["bank:payouts"])
	assert.Empty(t, a.open())
}

func TestWindowIsBusinessDays(t *testing.T) {
	// Friday 6 March + 5 business days = Friday 13 March.
	assert.Equal(t, day("2026-03-13"), bankstatement.AddBusinessDays(day("2026-03-06"), 5))
	a := newAccount(t)
	a.deliver(payout("stripe", "po_1", 500, "2026-03-06"))
	a.deliver(line("ref:late", 500, "2026-03-16", ""))
	assert.Contains(t, a.open(), "unidentified_deposit ref:late", "booked after the window: no match")
	assert.Contains(t, a.open(), "payout_not_received stripe/po_1", "statements cover past its window")
	a2 := newAccount(t)
	a2.deliver(payout("stripe", "po_1", 500, "2026-03-06"))
	a2.deliver(line("ref:ok", 500, "2026-03-13", ""))
	assert.Empty(t, a2.open())
}

func TestTieBreakAndReference(t *testing.T) {
	a := newAccount(t)
	a.deliver(payout("stripe", "po_B", 700, "2026-03-02"))
	a.deliver(payout("adyen", "TX99XT", 700, "2026-03-02"))
	a.deliver(payout("stripe", "po_A", 700, "2026-03-02"))
	// No reference: earliest arrival, then provider name, then id.
	evs := a.deliver(line("ref:1", 700, "2026-03-03", ""))
	assert.Equal(t, "TX99XT", evs[0].(bankstatement.LineBooked).Payouts[0].ID)
	// The text names po_B: it wins over po_A.
	evs = a.deliver(line("ref:2", 700, "2026-03-03", "payout PO_B"))
	assert.Equal(t, "po_B", evs[0].(bankstatement.LineBooked).Payouts[0].ID)
	evs = a.deliver(line("ref:3", 700, "2026-03-03", ""))
	assert.Equal(t, "po_A", evs[0].(bankstatement.LineBooked).Payouts[0].ID)
}

func TestOneCreditSeveralPayouts(t *testing.T) {
	a := newAccount(t)
	for i, amt := range []int64{100, 250, 400, 800} {
		a.deliver(payout("adyen", "b"+string(rune('1'+i)), amt, "2026-03-02"))
	}
	a.deliver(payout("stripe", "s1", 650, "2026-03-02")) // another provider: never part of a subset with adyen's
	evs := a.deliver(line("ref:sum", 1150, "2026-03-03", ""))
	got := evs[0].(bankstatement.LineBooked).Payouts
	// 250+800 and 100+250+800 both sum to 11.50: the search takes ids
	// lowest first, depth first, so 100+250+800 is found first.
	require.Len(t, got, 3)
	assert.Equal(t, []string{"b1", "b2", "b4"}, []string{got[0].ID, got[1].ID, got[2].ID})
}

func TestReturn(t *testing.T) {
	a := newAccount(t)
	a.deliver(payout("stripe", "po_1", 10000, "2026-03-02"))
	a.deliver(line("ref:in", 10000, "2026-03-03", ""))
	rev := line("ref:back", -10000, "2026-03-05", "RETURN po_1")
	rev.Line.Reversal = true
	a.deliver(rev)
	assert.Contains(t, a.open(), "payout_returned stripe/po_1")
	assert.Equal(t, int64(0), a.balances["bank:main"])
	assert.Equal(t, int64(0), a.balances["bank:payouts"], "the money is back on its way: -10000 banked, +10000 returned")
}

func TestReturnBeforeItsCredit(t *testing.T) {
	a := newAccount(t)
	rev := line("ref:back", -10000, "2026-03-05", "")
	rev.Line.Reversal = true
	a.deliver(rev)
	assert.Empty(t, a.open(), "an unmatched debit opens nothing")
	a.deliver(line("ref:in", 10000, "2026-03-03", ""))
	a.deliver(payout("stripe", "po_1", 10000, "2026-03-02"))
	assert.Equal(t, map[string]string{"payout_returned stripe/po_1": a.open()["payout_returned stripe/po_1"]}, a.open())
	assert.Equal(t, int64(0), a.balances["suspense:bank:main"])
}

func TestStatementGap(t *testing.T) {
	a := newAccount(t)
	st := func(seq int64, covers string) bankstatement.Input {
		return bankstatement.Input{Statement: &bankstatement.Statement{Format: "camt.053", Seq: seq, Covers: day(covers)}}
	}
	a.deliver(st(1, "2026-03-02"))
	a.deliver(st(4, "2026-03-05"))
	assert.Len(t, a.open(), 2)
	assert.Contains(t, a.open(), "statement_gap seq:2")
	a.deliver(st(3, "2026-03-04"))
	assert.Len(t, a.open(), 1)
	a.deliver(st(2, "2026-03-03"))
	assert.Empty(t, a.open())
	a.deliver(st(2, "2026-03-03"))
	assert.Empty(t, a.open(), "a statement again changes nothing")
}

func TestLineOnce(t *testing.T) {
	a := newAccount(t)
	a.deliver(line("ref:L", 100, "2026-03-03", ""))
	assert.Empty(t, a.deliver(line("ref:L", 100, "2026-03-03", "")), "the same entry (camt.054, then camt.053) is one line")
}

func TestInvalid(t *testing.T) {
	s := bankstatement.NewState("main", 5)
	_, err := s.Decide(bankstatement.Delivery{DedupKey: "x", Input: bankstatement.Input{}})
	require.ErrorIs(t, err, bankstatement.ErrInvalid)
	_, err = s.Decide(bankstatement.Delivery{DedupKey: "x", Input: line("k", 0, "2026-03-03", "")})
	require.ErrorIs(t, err, bankstatement.ErrInvalid)
}

func TestReconKindsListed(t *testing.T) {
	for _, k := range bankstatement.ReconKinds() {
		assert.Contains(t, payment.ReconKinds(), k, "a filter by kind knows the bank's")
	}
}

// TestFailedPayoutIsNotExpected: a payout the provider says failed before
// any line banked it is not expected any more, whichever came first.
func TestFailedPayoutIsNotExpected(t *testing.T) {
	failed := func(in bankstatement.Input) bankstatement.Input {
		p := *in.Payout
		p.Failed = true
		return bankstatement.Input{Payout: &p}
	}
	st := bankstatement.Input{Statement: &bankstatement.Statement{Format: "camt.053", Seq: 1, Covers: day("2026-03-20")}}
	a := newAccount(t)
	a.deliver(payout("stripe", "po_1", 500, "2026-03-02"))
	a.deliver(st)
	assert.Contains(t, a.open(), "payout_not_received stripe/po_1")
	a.deliver(failed(payout("stripe", "po_1", 500, "2026-03-02")))
	assert.Empty(t, a.open(), "the failure clears it")
	a.deliver(line("ref:x", 500, "2026-03-03", ""))
	assert.Contains(t, a.open(), "unidentified_deposit ref:x", "a failed payout is never matched")

	b := newAccount(t)
	b.deliver(failed(payout("stripe", "po_1", 500, "2026-03-02")))
	b.deliver(payout("stripe", "po_1", 500, "2026-03-02"))
	b.deliver(st)
	assert.Empty(t, b.open(), "failed first, paid after: still not expected")
}
