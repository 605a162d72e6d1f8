package bankstatement

import (
	"slices"
	"strings"
)

// maxSubsetPayouts: one credit settles up to 8 payouts of one provider and
// arrival date (CONTRACT); maxGroupSearched bounds the payouts of a group
// searched, so that the search is at most C(16,2)+…+C(16,8) sums.
const (
	maxSubsetPayouts = 8
	maxGroupSearched = 16
)

// candidates are the unbanked payouts of l's currency and sign whose window
// (arrival date through ArrivalDays business days) holds l's booking date.
func (s *State) candidates(l Line) []*payoutState {
	byDay := s.unbanked[l.Currency]
	if len(byDay) == 0 {
		return nil
	}
	// ArrivalDays business days span at most this many calendar days.
	back := s.ArrivalDays + 2*(s.ArrivalDays/5+1)
	var out []*payoutState
	for i := 0; i <= back; i++ {
		day := l.BookedOn.AddDate(0, 0, -i)
		for _, p := range byDay[day] {
			if (p.Amount > 0) != (l.Amount > 0) || p.returned || p.failed {
				continue
			}
			if l.BookedOn.After(AddBusinessDays(p.ArrivalOn, s.ArrivalDays)) {
				continue
			}
			out = append(out, p)
		}
	}
	slices.SortFunc(out, byArrival)
	return out
}

// byArrival is the documented tie-break: arrival date, provider, payout id.
func byArrival(a, b *payoutState) int {
	if c := a.ArrivalOn.Compare(b.ArrivalOn); c != 0 {
		return c
	}
	if c := strings.Compare(a.Provider, b.Provider); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// What matched a line to its payouts, strongest first (LineBooked.By).
const (
	ByTraceID    = "trace_id"   // the payout's trace id: unique, final
	ByReference  = "reference"  // the payout id, or the provider's own reference
	ByDescriptor = "descriptor" // the statement descriptor: narrows equal candidates
	ByAmount     = "amount"     // amount, currency and window alone (the tie-break)
)

// Strengths of By, compared: a stronger fact moves a line matched by a
// weaker one (rematch.go).
const (
	strengthAmount = iota
	strengthDescriptor
	strengthReference
	strengthTrace
)

var byName = [...]string{ByAmount, ByDescriptor, ByReference, ByTraceID}

// minRef is the shortest reference looked for in a line's text: shorter
// ones match by accident.
const minRef = 4

// achDescriptor: Stripe maps a US ACH payout's statement descriptor to the
// ACH Company Entry Description, which NACHA limits to 10 characters, and
// "silently truncates any descriptor longer than 10 characters"
// (docs.stripe.com/payouts/statement-descriptors): the bank may show only
// the first 10.
const achDescriptor = 10

// haystack is what a line's references are looked for in: its remittance
// text and its reference, upper case.
func haystack(l Line) string {
	if l.Reference == "" {
		return strings.ToUpper(l.Text)
	}
	return strings.ToUpper(l.Text + " " + l.Reference)
}

// strength is how strongly the text t (a haystack) names p: its trace id,
// its id or reference, its statement descriptor (whole, or its first 10
// characters), or nothing (strengthAmount).
func strength(t string, p *payoutState) int {
	if t == "" {
		return strengthAmount
	}
	has := func(ref string) bool { return len(ref) >= minRef && strings.Contains(t, strings.ToUpper(ref)) }
	switch {
	case has(p.TraceID):
		return strengthTrace
	case has(p.ID) || has(p.Reference):
		return strengthReference
	case has(p.Descriptor):
		return strengthDescriptor
	case len(p.Descriptor) > achDescriptor && has(strings.TrimSpace(truncRunes(p.Descriptor, achDescriptor))):
		return strengthDescriptor
	}
	return strengthAmount
}

func truncRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// named reports whether t names p at all.
func named(t string, p *payoutState) bool { return strength(t, p) > strengthAmount }

// result is what matching a line found: the payouts it banks and by what,
// and, when it takes a payout another line banked by a weaker match, that
// line's move to another payout (made first).
type result struct {
	refs []PayoutRef
	by   string
	move *move
}

// move: line banks to instead of from.
type move struct {
	line     *lineState
	from, to *payoutState
	by       int
}

func single(p *payoutState) []PayoutRef {
	return []PayoutRef{{Provider: p.Provider, ID: p.ID, Amount: p.Amount}}
}

// match returns the payouts l proves banked (none: refs nil).
//
// A payout of l's amount first: the one l names most strongly (trace id,
// then id or reference, then descriptor), ties by arrival, provider, id.
// A payout another line banked by a weaker match than l's naming of it
// (and than l's best free payout) is taken from that line when the line
// has another free payout of its amount to bank instead (the move). Then
// subsets, among the named payouts first.
func (s *State) match(l Line) result {
	t := haystack(l)
	all := s.candidates(l)
	var best *payoutState
	bestS := -1
	for _, p := range all {
		if p.Amount != l.Amount {
			continue
		}
		if st := strength(t, p); st > bestS {
			best, bestS = p, st
		}
	}
	if mv := s.displace(l, t, bestS); mv != nil {
		return result{refs: single(mv.from), by: byName[strength(t, mv.from)], move: mv}
	}
	if best != nil {
		return result{refs: single(best), by: byName[bestS]}
	}
	if len(all) == 0 {
		return result{}
	}
	var withRef []*payoutState
	for _, p := range all {
		if named(t, p) {
			withRef = append(withRef, p)
		}
	}
	pools := [][]*payoutState{all}
	if len(withRef) > 0 {
		pools = [][]*payoutState{withRef, all}
	}
	for _, pool := range pools {
		if got := subsetMatch(pool, l.Amount); got != nil {
			st := strengthTrace
			for _, r := range got {
				st = min(st, strength(t, s.payouts[r.Key()]))
			}
			return result{refs: got, by: byName[st]}
		}
	}
	return result{}
}

// displace looks among the payouts of l's amount and window that other
// lines banked by a weaker match for one l names more strongly than both
// that line does and floor (l's best free payout); the other line must
// have a free payout of its amount to move to.
func (s *State) displace(l Line, t string, floor int) *move {
	if t == "" {
		return nil
	}
	var out *move
	bestS := floor
	for _, p := range s.weakCandidates(l) {
		if p.Amount != l.Amount || p.lineRef == nil {
			continue
		}
		st := strength(t, p)
		if st <= bestS || st <= strength(haystack(p.lineRef.Line), p) {
			continue
		}
		to, toS := s.bestFree(p.lineRef.Line)
		if to == nil {
			continue
		}
		out, bestS = &move{line: p.lineRef, from: p, to: to, by: toS}, st
	}
	return out
}

// bestFree is the unbanked payout of l's amount l names most strongly
// (nil when none).
func (s *State) bestFree(l Line) (*payoutState, int) {
	t := haystack(l)
	var best *payoutState
	bestS := -1
	for _, p := range s.candidates(l) {
		if p.Amount != l.Amount {
			continue
		}
		if st := strength(t, p); st > bestS {
			best, bestS = p, st
		}
	}
	return best, bestS
}

// subsetMatch looks, group by group (arrival date, then provider), for 2 to
// 8 payouts of one group whose amounts sum to amount.
func subsetMatch(pool []*payoutState, amount int64) []PayoutRef {
	for i := 0; i < len(pool); {
		j := i
		for j < len(pool) && pool[j].ArrivalOn.Equal(pool[i].ArrivalOn) && pool[j].Provider == pool[i].Provider {
			j++
		}
		group := pool[i:j] // sorted by id (byArrival)
		if len(group) > maxGroupSearched {
			group = group[:maxGroupSearched]
		}
		if pick := subset(group, amount); pick != nil {
			out := make([]PayoutRef, len(pick))
			for k, p := range pick {
				out[k] = PayoutRef{Provider: p.Provider, ID: p.ID, Amount: p.Amount}
			}
			return out
		}
		i = j
	}
	return nil
}

// subset finds the first subset of 2 to maxSubsetPayouts of group (in the
// order of its ids, lowest first) summing to target; every amount has
// target's sign, so a partial sum past target is pruned.
func subset(group []*payoutState, target int64) []*payoutState {
	if len(group) < 2 {
		return nil
	}
	neg := target < 0
	abs := func(v int64) int64 {
		if neg {
			return -v
		}
		return v
	}
	want := abs(target)
	var pick []*payoutState
	var walk func(from int, sum int64) bool
	walk = func(from int, sum int64) bool {
		if sum == want && len(pick) >= 2 {
			return true
		}
		if len(pick) == maxSubsetPayouts {
			return false
		}
		for k := from; k < len(group); k++ {
			v := abs(group[k].Amount)
			if sum+v > want {
				continue
			}
			pick = append(pick, group[k])
			if walk(k+1, sum+v) {
				return true
			}
			pick = pick[:len(pick)-1]
		}
		return false
	}
	if walk(0, 0) {
		return pick
	}
	return nil
}

// findReturn is the banked payout a reversal debit l returns: of its
// amount and currency, banked on or before l's booking date; the one l's
// text names first, then the latest banked, then provider and id.
func (s *State) findReturn(l Line) *payoutState {
	t := haystack(l)
	var best *payoutState
	better := func(p *payoutState) bool {
		if best == nil {
			return true
		}
		if a, b := named(t, p), named(t, best); a != b {
			return a
		}
		if c := p.bankedOn.Compare(best.bankedOn); c != 0 {
			return c > 0
		}
		return byArrival(p, best) < 0
	}
	for _, p := range s.banked[l.Currency][-l.Amount] {
		if p.returned || p.bankedOn.After(l.BookedOn) {
			continue
		}
		if better(p) {
			best = p
		}
	}
	return best
}

// strengthOf is the strength of a By ("" in events before By: the
// tie-break's).
func strengthOf(by string) int {
	for i, n := range byName {
		if n == by {
			return i
		}
	}
	return strengthAmount
}
