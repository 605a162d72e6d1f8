package bankstatement

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// A line matched to one payout by less than the payout's trace id (by the
// tie-break, a descriptor, or even the payout id) is weak: a stronger fact
// arriving later, a payout or a payout's trace id that the line names,
// moves it (LineRematched), so that the final matches do not depend on the
// order the statement, the webhooks and the trace ids arrive in. A line
// that banked several payouts, or one by its trace id, is never moved.
// Moves are between payouts of the line's amount only, so they post
// nothing.

// maxMoves bounds the moves one delivery makes (each move strengthens a
// line's match, so the chain ends; the bound keeps a delivery's cost
// bounded whatever the stream holds).
const maxMoves = 16

func (s *State) weakAdd(p *payoutState, l *lineState) {
	if l.by >= strengthTrace {
		return
	}
	l.alone, p.lineRef = p, l
	byDay := s.weak[p.Currency]
	if byDay == nil {
		byDay = map[time.Time][]*payoutState{}
		s.weak[p.Currency] = byDay
	}
	byDay[p.ArrivalOn] = append(byDay[p.ArrivalOn], p)
	days := s.weakLines[l.Currency]
	if days == nil {
		days = map[time.Time]map[string]*lineState{}
		s.weakLines[l.Currency] = days
	}
	d := Day(l.BookedOn)
	if days[d] == nil {
		days[d] = map[string]*lineState{}
	}
	days[d][l.Key] = l
}

func (s *State) weakRemove(p *payoutState) {
	l := p.lineRef
	if l == nil {
		return
	}
	p.lineRef, l.alone = nil, nil
	byDay := s.weak[p.Currency]
	s.unbankedRemove(byDay[p.ArrivalOn], p, func(v []*payoutState) {
		if len(v) == 0 {
			delete(byDay, p.ArrivalOn)
		} else {
			byDay[p.ArrivalOn] = v
		}
	})
	d := Day(l.BookedOn)
	if days := s.weakLines[l.Currency]; days != nil {
		delete(days[d], l.Key)
		if len(days[d]) == 0 {
			delete(days, d)
		}
	}
}

// unbank: p waits for its line again.
func (s *State) unbank(p *payoutState) {
	s.weakRemove(p)
	p.banked, p.bankedOn, p.line = false, time.Time{}, ""
	s.unbankedRemove(s.banked[p.Currency][p.Amount], p, func(v []*payoutState) { s.banked[p.Currency][p.Amount] = v })
	byDay := s.unbanked[p.Currency]
	if byDay == nil {
		byDay = map[time.Time][]*payoutState{}
		s.unbanked[p.Currency] = byDay
	}
	byDay[p.ArrivalOn] = append(byDay[p.ArrivalOn], p)
}

// rematched folds a LineRematched: the line leaves From (when it still
// banks it) and banks To (taken from the line that banked it, whose own
// move follows).
func (s *State) rematched(e LineRematched) error {
	if len(e.From) != 1 || len(e.To) != 1 {
		return fmt.Errorf("bank %s: %s of line %q moves %d payouts to %d", s.Account, e.Type(), e.LineKey, len(e.From), len(e.To))
	}
	from, to := s.payouts[e.From[0].Key()], s.payouts[e.To[0].Key()]
	if from == nil || to == nil {
		return fmt.Errorf("bank %s: %s of line %q names a payout the stream does not hold", s.Account, e.Type(), e.LineKey)
	}
	var l *lineState
	switch {
	case from.line == e.LineKey:
		l = from.lineRef
		s.unbank(from)
	case s.moving[e.LineKey] != nil:
		// The move before this one (a swap) took its payout.
		l = s.moving[e.LineKey]
		delete(s.moving, e.LineKey)
	}
	if l == nil {
		return fmt.Errorf("bank %s: %s moves line %q the stream does not hold as weakly matched", s.Account, e.Type(), e.LineKey)
	}
	if to.banked {
		if to.line == l.Key {
			return nil
		}
		// A swap: the line that banked to moves next, to from.
		if o := to.lineRef; o != nil {
			s.moving[o.Key] = o
		}
		s.unbank(to)
	}
	if l.alone != nil && l.alone != to {
		s.weakRemove(l.alone)
	}
	l.by = strengthOf(e.By)
	s.bank(to, l)
	return nil
}

// weakCandidates are the payouts of l's currency and sign banked weakly
// whose window holds l's booking date.
func (s *State) weakCandidates(l Line) []*payoutState {
	byDay := s.weak[l.Currency]
	if len(byDay) == 0 {
		return nil
	}
	back := s.ArrivalDays + 2*(s.ArrivalDays/5+1)
	var out []*payoutState
	for i := 0; i <= back; i++ {
		for _, p := range byDay[l.BookedOn.AddDate(0, 0, -i)] {
			if (p.Amount > 0) != (l.Amount > 0) || l.BookedOn.After(AddBusinessDays(p.ArrivalOn, s.ArrivalDays)) {
				continue
			}
			out = append(out, p)
		}
	}
	slices.SortFunc(out, byArrival)
	return out
}

// weakLinesFor are the weak lines of p's amount booked in p's window,
// oldest first.
func (s *State) weakLinesFor(p *payoutState) []*lineState {
	var out []*lineState
	through := AddBusinessDays(p.ArrivalOn, s.ArrivalDays)
	for d := p.ArrivalOn; !d.After(through); d = d.AddDate(0, 0, 1) {
		for _, l := range s.weakLines[p.Currency][d] {
			if l.Amount == p.Amount && l.alone != nil && l.alone != p {
				out = append(out, l)
			}
		}
	}
	sortLines(out)
	return out
}

// emitMove records m: m.line banks m.to instead of m.from.
func (dc *decision) emitMove(m *move) error {
	l := m.line
	if err := dc.emit(LineRematched{Meta: dc.meta(l.BookedOn), Account: dc.s.Account, LineKey: l.Key, Amount: l.Amount,
		Currency: l.Currency, BookedOn: l.BookedOn, From: single(m.from), To: single(m.to), By: byName[m.by]}); err != nil {
		return err
	}
	return dc.clear(ReconPayoutNotReceived, m.to.Key(), "banked by line "+l.Key, l.BookedOn)
}

// resolve gives p the weak line that names it more strongly than the
// payout it banks, and more strongly than p's own line names p: the line
// moves to p, and p's line (when p was banked) to the line's payout; else
// the payout the line leaves waits again and is offered to the lines
// waiting in suspense, and to weak lines, in turn.
func (dc *decision) resolve(p *payoutState, depth int) error {
	s := dc.s
	if depth >= maxMoves || p.failed || p.returned || (p.banked && p.lineRef == nil) {
		return nil
	}
	floor := strengthAmount
	if p.banked {
		floor = strength(haystack(p.lineRef.Line), p)
	}
	var pick *lineState
	pickS := floor
	for _, l := range s.weakLinesFor(p) {
		t := haystack(l.Line)
		st := strength(t, p)
		if st <= pickS || st <= strength(t, l.alone) {
			continue
		}
		pick, pickS = l, st
	}
	if pick == nil {
		return nil
	}
	q := pick.alone
	if p.banked {
		other := p.lineRef
		if err := dc.emitMove(&move{line: pick, from: q, to: p, by: pickS}); err != nil {
			return err
		}
		return dc.emitMove(&move{line: other, from: p, to: q, by: strength(haystack(other.Line), q)})
	}
	if err := dc.emitMove(&move{line: pick, from: q, to: p, by: pickS}); err != nil {
		return err
	}
	// q waits again: a line in suspense or a weaker line may take it.
	if err := dc.offer(q); err != nil {
		return err
	}
	if err := dc.resolve(q, depth+1); err != nil {
		return err
	}
	if !q.banked && s.late(q, s.covered) {
		return dc.notReceived(q)
	}
	return nil
}

// offer matches the lines waiting in suspense in p's window again, oldest
// first (p is newly known, or waits again).
func (dc *decision) offer(p *payoutState) error {
	s := dc.s
	for _, l := range s.suspense.between(p.Currency, p.ArrivalOn, AddBusinessDays(p.ArrivalOn, s.ArrivalDays)) {
		if l.Reversal && l.Amount < 0 {
			continue // returns wait for a banked payout (after)
		}
		r := s.match(l.Line)
		if len(r.refs) == 0 {
			continue
		}
		if r.move != nil {
			if err := dc.emitMove(r.move); err != nil {
				return err
			}
		}
		if err := dc.emit(LineMatched{Meta: dc.meta(l.BookedOn), Account: s.Account, LineKey: l.Key, Amount: l.Amount,
			Currency: l.Currency, BookedOn: l.BookedOn, Payouts: r.refs, By: r.by}); err != nil {
			return err
		}
		if err := dc.clear(ReconUnidentifiedDeposit, l.Key, "matched payout "+strings.Join(refKeys(r.refs), ", "), l.BookedOn); err != nil {
			return err
		}
		if err := dc.after(l.Line, r.refs, nil); err != nil {
			return err
		}
	}
	return nil
}

func refKeys(rs []PayoutRef) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Key()
	}
	return out
}
