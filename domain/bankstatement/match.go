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

// named reports whether l's remittance text holds p's reference: its payout
// id, or the reference the provider prints (case-insensitive).
func named(text string, p *payoutState) bool {
	if text == "" {
		return false
	}
	t := strings.ToUpper(text)
	for _, ref := range []string{p.ID, p.Reference} {
		if len(ref) >= 4 && strings.Contains(t, strings.ToUpper(ref)) {
			return true
		}
	}
	return false
}

// match returns the payouts l proves banked, or nil.
func (s *State) match(l Line) []PayoutRef {
	all := s.candidates(l)
	if len(all) == 0 {
		return nil
	}
	var withRef []*payoutState
	for _, p := range all {
		if named(l.Text, p) {
			withRef = append(withRef, p)
		}
	}
	pools := [][]*payoutState{all}
	if len(withRef) > 0 {
		pools = [][]*payoutState{withRef, all}
	}
	for _, pool := range pools {
		for _, p := range pool {
			if p.Amount == l.Amount {
				return []PayoutRef{{Provider: p.Provider, ID: p.ID, Amount: p.Amount}}
			}
		}
	}
	for _, pool := range pools {
		if got := subsetMatch(pool, l.Amount); got != nil {
			return got
		}
	}
	return nil
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
	var best *payoutState
	better := func(p *payoutState) bool {
		if best == nil {
			return true
		}
		if a, b := named(l.Text, p), named(l.Text, best); a != b {
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
