package bankstatement

import (
	"fmt"
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
	// suspended: lines in suspense by currency (what a late payout looks
	// for).
	suspended map[money.Currency]map[string]*lineState

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
}

type payoutState struct {
	Payout
	banked   bool
	bankedOn time.Time
	returned bool
	line     string
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
		suspended: map[money.Currency]map[string]*lineState{},
		seqs:      map[int64]bool{}, open: map[itemKey]bool{}}
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
		s.addPayout(e.Payout)
	case LineBooked:
		l := &lineState{Line: e.Line, matched: e.Matched()}
		s.lines[e.Line.Key] = struct{}{}
		s.settle(l, e.Payouts, e.Returned)
	case LineMatched:
		l := s.suspended[e.Currency][e.LineKey]
		if l == nil {
			return fmt.Errorf("bank %s: %s matches line %q the stream does not hold in suspense", s.Account, e.Type(), e.LineKey)
		}
		l.matched = true
		s.settle(l, e.Payouts, e.Returned)
	case StatementRecorded:
		s.addStatement(e.Statement)
	case payment.Flagged:
		s.open[itemKey{e.Kind, e.Key}] = true
	case payment.Cleared:
		delete(s.open, itemKey{e.Kind, e.Key})
	}
	return nil
}

func (s *State) addPayout(p Payout) {
	if _, ok := s.payouts[p.Key()]; ok {
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
	susp := s.suspended[l.Currency]
	switch {
	case len(banked) > 0:
		for _, r := range banked {
			if p := s.payouts[r.Key()]; p != nil {
				s.bank(p, l)
			}
		}
		delete(susp, l.Key)
	case returned != nil:
		if p := s.payouts[returned.Key()]; p != nil {
			p.returned = true
			s.unbankedRemove(s.banked[p.Currency][p.Amount], p, func(v []*payoutState) { s.banked[p.Currency][p.Amount] = v })
		}
		delete(susp, l.Key)
	default:
		if susp == nil {
			susp = map[string]*lineState{}
			s.suspended[l.Currency] = susp
		}
		susp[l.Key] = l
	}
	if l.BookedOn.After(s.covered) {
		s.covered = l.BookedOn
	}
}

func (s *State) bank(p *payoutState, l *lineState) {
	p.banked, p.bankedOn, p.line = true, l.BookedOn, l.Key
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
