package bankstatement

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
)

// State is a bank account's stream folded: what deciding a delivery
// needs, indexed so that a line costs the same whatever the stream holds
// (the payouts of its currency, amount and window; not every payout).
type State struct {
	Account     string
	ArrivalDays int
	n           int // events folded

	// lines are the keys of the lines on record; only a line in
	// suspense is kept whole (suspended), so memory per line is its key.
	lines   map[string]struct{}
	payouts map[string]*payoutState
	// unbanked: payouts waiting for their line, by currency and arrival
	// day.
	unbanked map[money.Currency]map[time.Time][]*payoutState
	// banked: payouts banked and not returned, by currency and amount
	// (what a return looks for).
	banked map[money.Currency]map[int64][]*payoutState
	// suspense: the lines in suspense by currency and booking day (what
	// a late payout looks for, in its window's days only), and the
	// reversal debits among them (what a payout banked later looks for).
	suspense suspenseIndex
	// weak: the payouts banked alone by a line matched by less than a
	// trace id, by currency and arrival day, and those lines by currency
	// and booking day: what a stronger fact may move (rematch.go).
	weak      map[money.Currency]map[time.Time][]*payoutState
	weakLines map[money.Currency]map[time.Time]map[string]*lineState
	moving    map[string]*lineState // a swap's second line, between its two events

	seqs    map[int64]bool
	minSeq  int64
	maxSeq  int64
	covered time.Time // the last booking date the statements cover
	open    map[itemKey]bool
}

type itemKey struct{ kind, key string }

type lineState struct {
	Line
	matched bool
	by      int          // strength of the match
	alone   *payoutState // the payout it banks when it banks one (weak lines)
}

type payoutState struct {
	Payout
	banked   bool
	bankedOn time.Time
	returned bool
	failed   bool // the provider's payout failed before any line banked it
	line     string
	lineRef  *lineState // the line, while it is weak (movable)
}

// NewState is the empty state of account's stream; arrivalDays <= 0 takes
// DefaultArrivalDays.
func NewState(account string, arrivalDays int) *State {
	if arrivalDays <= 0 {
		arrivalDays = DefaultArrivalDays
	}
	return &State{Account: account, ArrivalDays: arrivalDays,
		lines: map[string]struct{}{}, payouts: map[string]*payoutState{},
		unbanked:  map[money.Currency]map[time.Time][]*payoutState{},
		banked:    map[money.Currency]map[int64][]*payoutState{},
		suspense:  suspenseIndex{byDay: map[money.Currency]map[time.Time]map[string]*lineState{}, reversals: map[money.Currency]map[string]*lineState{}},
		weak:      map[money.Currency]map[time.Time][]*payoutState{},
		weakLines: map[money.Currency]map[time.Time]map[string]*lineState{}, moving: map[string]*lineState{},
		seqs: map[int64]bool{}, open: map[itemKey]bool{}}
}

// Len is how many events the state folded.
func (s *State) Len() int { return s.n }

// Covered is the last booking date the account's statements cover.
func (s *State) Covered() time.Time { return s.covered }

// Open reports whether the item (kind, key) is open.
func (s *State) Open(kind, key string) bool { return s.open[itemKey{kind, key}] }

// Banked returns the line that banked a payout ("" when none) and whether
// it was returned.
func (s *State) Banked(provider, id string) (line string, returned bool) {
	p := s.payouts[provider+"/"+id]
	if p == nil {
		return "", false
	}
	return p.line, p.returned
}

// Apply folds one recorded event of the stream.
func (s *State) Apply(e payment.Event) error {
	s.n++
	switch e := e.(type) {
	case PayoutKnown:
		if e.Payout.Failed {
			s.failPayout(e.Payout)
		} else {
			s.addPayout(e.Payout)
		}
	case LineBooked:
		l := &lineState{Line: e.Line, matched: e.Matched(), by: strengthOf(e.By)}
		s.lines[e.Line.Key] = struct{}{}
		s.settle(l, e.Payouts, e.Returned)
	case LineMatched:
		l := s.suspense.byDay[e.Currency][Day(e.BookedOn)][e.LineKey]
		if l == nil {
			return fmt.Errorf("bank %s: %s matches line %q the stream does not hold in suspense", s.Account, e.Type(), e.LineKey)
		}
		l.matched, l.by = true, strengthOf(e.By)
		s.settle(l, e.Payouts, e.Returned)
	case LineRematched:
		return s.rematched(e)
	case StatementRecorded:
		s.addStatement(e.Statement)
	case payment.Flagged:
		s.open[itemKey{e.Kind, e.Key}] = true
	case payment.Cleared:
		delete(s.open, itemKey{e.Kind, e.Key})
	}
	return nil
}

// failPayout: the provider's payout failed before a line banked it; the
// account stops expecting it (a banked payout stays banked: the bank's
// line says the money arrived).
func (s *State) failPayout(p Payout) {
	ps := s.payouts[p.Key()]
	if ps == nil {
		p.ArrivalOn = Day(p.ArrivalOn)
		ps = &payoutState{Payout: p}
		s.payouts[p.Key()] = ps
	}
	if ps.banked || ps.failed {
		return
	}
	ps.failed = true
	day := s.unbanked[ps.Currency]
	s.unbankedRemove(day[ps.ArrivalOn], ps, func(v []*payoutState) {
		if len(v) == 0 {
			delete(day, ps.ArrivalOn)
		} else {
			day[ps.ArrivalOn] = v
		}
	})
}

func (s *State) addPayout(p Payout) {
	if ps, ok := s.payouts[p.Key()]; ok {
		// Known again with what it lacked (its trace id, filled in
		// after payout.paid): the first value of each stands.
		if ps.TraceID == "" {
			ps.TraceID = p.TraceID
		}
		if ps.Descriptor == "" {
			ps.Descriptor = p.Descriptor
		}
		if ps.Reference == "" {
			ps.Reference = p.Reference
		}
		return
	}
	p.ArrivalOn = Day(p.ArrivalOn)
	ps := &payoutState{Payout: p}
	s.payouts[p.Key()] = ps
	byDay := s.unbanked[p.Currency]
	if byDay == nil {
		byDay = map[time.Time][]*payoutState{}
		s.unbanked[p.Currency] = byDay
	}
	byDay[p.ArrivalOn] = append(byDay[p.ArrivalOn], ps)
}

// settle folds what a line did: the payouts it banked, the payout it
// returned, or its wait in suspense.
func (s *State) settle(l *lineState, banked []PayoutRef, returned *PayoutRef) {
	switch {
	case len(banked) > 0:
		if len(banked) > 1 {
			l.by = strengthTrace // a subset is never moved (rematch.go)
		}
		for _, r := range banked {
			if p := s.payouts[r.Key()]; p != nil {
				s.bank(p, l)
			}
		}
		s.suspense.remove(l)
	case returned != nil:
		if p := s.payouts[returned.Key()]; p != nil {
			p.returned = true
			s.weakRemove(p) // a returned payout is never moved
			s.unbankedRemove(s.banked[p.Currency][p.Amount], p, func(v []*payoutState) { s.banked[p.Currency][p.Amount] = v })
		}
		s.suspense.remove(l)
	default:
		s.suspense.add(l)
	}
	if l.BookedOn.After(s.covered) {
		s.covered = l.BookedOn
	}
}

func (s *State) bank(p *payoutState, l *lineState) {
	p.banked, p.bankedOn, p.line = true, l.BookedOn, l.Key
	s.weakAdd(p, l)
	day := s.unbanked[p.Currency]
	s.unbankedRemove(day[p.ArrivalOn], p, func(v []*payoutState) {
		if len(v) == 0 {
			delete(day, p.ArrivalOn)
		} else {
			day[p.ArrivalOn] = v
		}
	})
	byAmt := s.banked[p.Currency]
	if byAmt == nil {
		byAmt = map[int64][]*payoutState{}
		s.banked[p.Currency] = byAmt
	}
	byAmt[p.Amount] = append(byAmt[p.Amount], p)
}

func (s *State) unbankedRemove(list []*payoutState, p *payoutState, set func([]*payoutState)) {
	for i, q := range list {
		if q == p {
			out := append(list[:i:i], list[i+1:]...)
			set(out)
			return
		}
	}
}

func (s *State) addStatement(st Statement) {
	if st.Seq > 0 {
		if len(s.seqs) == 0 || st.Seq < s.minSeq {
			s.minSeq = st.Seq
		}
		if st.Seq > s.maxSeq {
			s.maxSeq = st.Seq
		}
		s.seqs[st.Seq] = true
	}
	if c := Day(st.Covers); !st.Covers.IsZero() && c.After(s.covered) {
		s.covered = c
	}
}

// suspenseIndex holds the lines in suspense.
type suspenseIndex struct {
	byDay     map[money.Currency]map[time.Time]map[string]*lineState
	reversals map[money.Currency]map[string]*lineState
}

func (x suspenseIndex) add(l *lineState) {
	days := x.byDay[l.Currency]
	if days == nil {
		days = map[time.Time]map[string]*lineState{}
		x.byDay[l.Currency] = days
	}
	d := Day(l.BookedOn)
	if days[d] == nil {
		days[d] = map[string]*lineState{}
	}
	days[d][l.Key] = l
	if l.Reversal && l.Amount < 0 {
		if x.reversals[l.Currency] == nil {
			x.reversals[l.Currency] = map[string]*lineState{}
		}
		x.reversals[l.Currency][l.Key] = l
	}
}

func (x suspenseIndex) remove(l *lineState) {
	d := Day(l.BookedOn)
	if days := x.byDay[l.Currency]; days != nil {
		delete(days[d], l.Key)
		if len(days[d]) == 0 {
			delete(days, d)
		}
	}
	delete(x.reversals[l.Currency], l.Key)
}

// between returns the lines in suspense of c booked from one day through
// another, oldest first (then by key).
func (x suspenseIndex) between(c money.Currency, from, through time.Time) []*lineState {
	var out []*lineState
	for d := Day(from); !d.After(through); d = d.AddDate(0, 0, 1) {
		for _, l := range x.byDay[c][d] {
			out = append(out, l)
		}
	}
	sortLines(out)
	return out
}

// returnsWaiting returns the reversal debits of c in suspense, oldest first.
func (x suspenseIndex) returnsWaiting(c money.Currency) []*lineState {
	out := make([]*lineState, 0, len(x.reversals[c]))
	for _, l := range x.reversals[c] {
		out = append(out, l)
	}
	sortLines(out)
	return out
}

func sortLines(ls []*lineState) {
	slices.SortFunc(ls, func(a, b *lineState) int {
		if c := a.BookedOn.Compare(b.BookedOn); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
}
