package bankstatement

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
)

// Delivery is what the aggregate is asked to decide on: an input with the
// delivery's dedup key (the Meta of every event it causes).
type Delivery struct {
	DedupKey string
	Input    Input
}

// Decide returns the events d adds to the stream and folds them into s.
// Deciding the same delivery again (its facts on record) adds nothing.
// After an error s is undefined.
func (s *State) Decide(d Delivery) ([]payment.Event, error) {
	if err := d.Input.Validate(); err != nil {
		return nil, err
	}
	dc := &decision{s: s, dedup: d.DedupKey}
	var err error
	switch in := d.Input; {
	case in.Line != nil:
		err = dc.line(*in.Line)
	case in.Statement != nil:
		err = dc.statement(*in.Statement)
	case in.Payout != nil:
		err = dc.payout(*in.Payout)
	}
	return dc.out, err
}

// decision gathers the events of one delivery, folding each as it goes so
// that the next step decides on the state with it.
type decision struct {
	s     *State
	dedup string
	out   []payment.Event
}

func (dc *decision) meta(at time.Time) Meta {
	return Meta{Provider: Provider, PaymentKey: dc.s.Account, DedupKey: dc.dedup, OccurredAt: at}
}

func (dc *decision) emit(e payment.Event) error {
	if err := dc.s.Apply(e); err != nil {
		return err
	}
	dc.out = append(dc.out, e)
	return nil
}

func (dc *decision) flag(kind, key, details string, at time.Time) error {
	if dc.s.Open(kind, key) {
		return nil
	}
	return dc.emit(payment.Flagged{Meta: dc.meta(at), Kind: kind, Key: key, Details: details})
}

func (dc *decision) clear(kind, key, details string, at time.Time) error {
	if !dc.s.Open(kind, key) {
		return nil
	}
	return dc.emit(payment.Cleared{Meta: dc.meta(at), Kind: kind, Key: key, Details: details})
}

func (dc *decision) line(l Line) error {
	s := dc.s
	if _, ok := s.lines[l.Key]; ok {
		return nil // recorded under another delivery (a camt.054, then the day's camt.053)
	}
	l.BookedOn, l.ValueOn = Day(l.BookedOn), dayOrZero(l.ValueOn)
	before := s.covered
	e := LineBooked{Meta: dc.meta(l.BookedOn), Account: s.Account, Line: l}
	if l.Reversal && l.Amount < 0 {
		if p := s.findReturn(l); p != nil {
			e.Returned = &PayoutRef{Provider: p.Provider, ID: p.ID, Amount: p.Amount}
		}
	}
	if e.Returned == nil {
		r := s.match(l)
		e.Payouts, e.By = r.refs, r.by
		if r.move != nil {
			if err := dc.emitMove(r.move); err != nil {
				return err
			}
		}
	}
	if err := dc.emit(e); err != nil {
		return err
	}
	if err := dc.after(l, e.Payouts, e.Returned); err != nil {
		return err
	}
	if !e.Matched() && l.Amount > 0 {
		if err := dc.flag(ReconUnidentifiedDeposit, l.Key, fmt.Sprintf("bank %s: a credit of %s %s booked %s matches no payout (%s)",
			s.Account, money.FormatMinor(l.Amount, l.Currency), l.Currency, l.BookedOn.Format(time.DateOnly), trim(l.Text, 140)), l.BookedOn); err != nil {
			return err
		}
	}
	return dc.advance(before)
}

// after opens and clears what a matched line settles: payout_not_received
// of the payouts it banked clears, a return opens payout_returned, and a
// return the account holds in suspense finds the payout it was waiting for.
func (dc *decision) after(l Line, banked []PayoutRef, returned *PayoutRef) error {
	for _, r := range banked {
		if err := dc.clear(ReconPayoutNotReceived, r.Key(), "banked by line "+l.Key, l.BookedOn); err != nil {
			return err
		}
	}
	if returned != nil {
		if err := dc.flag(ReconPayoutReturned, returned.Key(), fmt.Sprintf("payout %s %s of %s returned by the bank: line %s booked %s",
			returned.Provider, returned.ID, money.FormatMinor(returned.Amount, l.Currency), l.Key, l.BookedOn.Format(time.DateOnly)), l.BookedOn); err != nil {
			return err
		}
	}
	if len(banked) > 0 {
		return dc.suspendedReturns(l.Currency)
	}
	return nil
}

// suspendedReturns matches reversal debits waiting in suspense to payouts
// banked since (a return read before the credit it returns).
func (dc *decision) suspendedReturns(c money.Currency) error {
	for _, l := range dc.s.suspense.returnsWaiting(c) {
		p := dc.s.findReturn(l.Line)
		if p == nil {
			continue
		}
		ref := &PayoutRef{Provider: p.Provider, ID: p.ID, Amount: p.Amount}
		if err := dc.emit(LineMatched{Meta: dc.meta(l.BookedOn), Account: dc.s.Account, LineKey: l.Key, Amount: l.Amount,
			Currency: l.Currency, BookedOn: l.BookedOn, Returned: ref}); err != nil {
			return err
		}
		if err := dc.after(l.Line, nil, ref); err != nil {
			return err
		}
	}
	return nil
}

func (dc *decision) statement(st Statement) error {
	s := dc.s
	at := Day(st.Covers)
	if st.Covers.IsZero() && st.Closing != nil {
		at = Day(st.Closing.Date)
	}
	st.Covers = at
	before, hadSeqs, lo, hi := s.covered, len(s.seqs) > 0, s.minSeq, s.maxSeq
	known := st.Seq > 0 && s.seqs[st.Seq]
	if err := dc.emit(StatementRecorded{Meta: dc.meta(at), Account: s.Account, Statement: st}); err != nil {
		return err
	}
	if st.Seq > 0 && !known {
		if err := dc.gaps(st.Seq, hadSeqs, lo, hi, at); err != nil {
			return err
		}
	}
	return dc.advance(before)
}

// maxGapItems bounds the statement_gap items one statement opens: a
// sequence that jumps by thousands (a bank that renumbered) is one item
// for the whole range, not thousands.
const maxGapItems = 31

// gaps opens statement_gap for each statement number missing between the
// new one and those on record, and clears the item of the number it fills.
func (dc *decision) gaps(seq int64, had bool, lo, hi int64, at time.Time) error {
	if err := dc.clear(ReconStatementGap, gapKey(seq, seq), fmt.Sprintf("statement %d imported", seq), at); err != nil {
		return err
	}
	if !had {
		return nil
	}
	from, to := int64(0), int64(-1)
	switch {
	case seq > hi+1:
		from, to = hi+1, seq-1
	case seq < lo-1:
		from, to = seq+1, lo-1
	}
	if from > to {
		return nil
	}
	details := func(a, b int64) string {
		return fmt.Sprintf("bank %s: statement %d imported, statement %s missing", dc.s.Account, seq, gapName(a, b))
	}
	if to-from+1 > maxGapItems {
		return dc.flag(ReconStatementGap, gapKey(from, to), details(from, to), at)
	}
	for n := from; n <= to; n++ {
		if err := dc.flag(ReconStatementGap, gapKey(n, n), details(n, n), at); err != nil {
			return err
		}
	}
	return nil
}

func gapKey(a, b int64) string {
	if a == b {
		return fmt.Sprintf("seq:%d", a)
	}
	return fmt.Sprintf("seq:%d-%d", a, b)
}

func gapName(a, b int64) string {
	if a == b {
		return fmt.Sprint(a)
	}
	return fmt.Sprintf("%d to %d", a, b)
}

func (dc *decision) payout(p Payout) error {
	s := dc.s
	if p.Failed {
		return dc.payoutFailed(p)
	}
	p.ArrivalOn = Day(p.ArrivalOn)
	if ps, ok := s.payouts[p.Key()]; ok {
		// Known: told again only with a reference it lacked (Stripe
		// fills trace_id in after payout.paid), which may move a line.
		if !adds(ps.Payout, p) || ps.failed {
			return nil
		}
		q := ps.Payout
		q.TraceID, q.Descriptor, q.Reference = firstOf(q.TraceID, p.TraceID), firstOf(q.Descriptor, p.Descriptor), firstOf(q.Reference, p.Reference)
		if err := dc.emit(PayoutKnown{Meta: dc.meta(p.ArrivalOn), Account: s.Account, Payout: q}); err != nil {
			return err
		}
		if err := dc.offer(ps); err != nil {
			return err
		}
		return dc.resolve(ps, 0)
	}
	if err := dc.emit(PayoutKnown{Meta: dc.meta(p.ArrivalOn), Account: s.Account, Payout: p}); err != nil {
		return err
	}
	// Lines that waited for it, in its window: match them again, oldest
	// first; then a weak line that names it moves to it.
	ps := s.payouts[p.Key()]
	if err := dc.offer(ps); err != nil {
		return err
	}
	if err := dc.resolve(ps, 0); err != nil {
		return err
	}
	if ps := s.payouts[p.Key()]; !ps.banked && s.late(ps, s.covered) {
		return dc.notReceived(ps)
	}
	return nil
}

// adds reports whether p tells of known a reference known lacks.
func adds(known, p Payout) bool {
	return (known.TraceID == "" && p.TraceID != "") || (known.Descriptor == "" && p.Descriptor != "") ||
		(known.Reference == "" && p.Reference != "")
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// payoutFailed: the provider says the payout failed; unless a line banked
// it, the account stops expecting it and its payout_not_received clears.
func (dc *decision) payoutFailed(p Payout) error {
	s := dc.s
	if ps, ok := s.payouts[p.Key()]; ok && (ps.banked || ps.failed) {
		return nil
	}
	p.ArrivalOn = Day(p.ArrivalOn)
	if err := dc.emit(PayoutKnown{Meta: dc.meta(p.ArrivalOn), Account: s.Account, Payout: p}); err != nil {
		return err
	}
	return dc.clear(ReconPayoutNotReceived, p.Key(), "the provider says the payout failed", s.covered)
}

// late reports whether a payout's window closed before covered.
func (s *State) late(p *payoutState, covered time.Time) bool {
	return !p.banked && !p.returned && !p.failed && !covered.IsZero() && covered.After(AddBusinessDays(p.ArrivalOn, s.ArrivalDays))
}

func (dc *decision) notReceived(p *payoutState) error {
	s := dc.s
	return dc.flag(ReconPayoutNotReceived, p.Key(), fmt.Sprintf(
		"payout %s %s of %s %s, arriving %s, is on no statement of bank %s through %s (%d business days)",
		p.Provider, p.ID, money.FormatMinor(p.Amount, p.Currency), p.Currency, p.ArrivalOn.Format(time.DateOnly),
		s.Account, s.covered.Format(time.DateOnly), s.ArrivalDays), s.covered)
}

// advance opens payout_not_received for the payouts whose window the
// statements now cover past, once per advance of the covered date (not per
// line: the cost is per day of statements).
func (dc *decision) advance(before time.Time) error {
	s := dc.s
	if !s.covered.After(before) {
		return nil
	}
	var late []*payoutState
	for _, byDay := range s.unbanked {
		for _, ps := range byDay {
			for _, p := range ps {
				if s.late(p, s.covered) && !s.Open(ReconPayoutNotReceived, p.Key()) {
					late = append(late, p)
				}
			}
		}
	}
	slices.SortFunc(late, func(a, b *payoutState) int { return strings.Compare(a.Key(), b.Key()) })
	for _, p := range late {
		if err := dc.notReceived(p); err != nil {
			return err
		}
	}
	return nil
}

func dayOrZero(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return Day(t)
}

// trim cuts s to about n bytes, at a rune boundary.
func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
