package bankstatement_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/onceledger/onceledger/domain/bankstatement"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/payment"
)

// Scenario is a generated month of payouts and the statements that bank
// them, with at most one fault (Generate); the store-level property test
// (adapters/bankimport) delivers the same scenarios through the inbox.
type scenario struct {
	payouts    []bankstatement.Payout
	statements []genStatement
	fault      string // "", "missing", "unknown", "return", "gap"
	// unbanked is what bank:payouts ends with: the payouts no line banked
	// (the missing credit) or that came back (the return).
	unbanked int64
	item     string // the item the fault opens: "kind key"
}

type genStatement struct {
	seq   int64
	day   time.Time
	lines []bankstatement.Line
}

var providers = []string{"stripe", "adyen", "paypal"}

func genScenario(t *rapid.T) scenario {
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC) // a Monday
	n := rapid.IntRange(1, 12).Draw(t, "payouts")
	var sc scenario
	byBank := map[time.Time][]bankstatement.Line{}
	used := map[int64]bool{}
	amount := func(label string) int64 {
		for {
			a := rapid.Int64Range(1_000, 50_000_000).Draw(t, label)
			if !used[a] {
				used[a] = true
				return a
			}
		}
	}
	type group struct {
		provider string
		day      time.Time
		ids      []int
	}
	for i := 0; i < n; i++ {
		p := bankstatement.Payout{Provider: rapid.SampledFrom(providers).Draw(t, "provider"), ID: fmt.Sprintf("po_%03d", i),
			Amount: amount("amount"), Currency: "EUR", ArrivalOn: bankstatement.AddBusinessDays(start, rapid.IntRange(0, 8).Draw(t, "arrival"))}
		sc.payouts = append(sc.payouts, p)
	}
	// Each payout's credit, alone or (Adyen style) one credit for the
	// payouts of one provider and day.
	done := map[int]bool{}
	for i, p := range sc.payouts {
		if done[i] {
			continue
		}
		members := []int{i}
		if rapid.Bool().Draw(t, "combine") {
			for j := i + 1; j < len(sc.payouts) && len(members) < 8; j++ {
				q := sc.payouts[j]
				if !done[j] && q.Provider == p.Provider && q.ArrivalOn.Equal(p.ArrivalOn) {
					members = append(members, j)
				}
			}
		}
		var sum int64
		text := ""
		for _, m := range members {
			done[m] = true
			sum += sc.payouts[m].Amount
			if len(members) == 1 && rapid.Bool().Draw(t, "reference") {
				text = "PAYOUT " + sc.payouts[m].ID
			}
		}
		booked := bankstatement.AddBusinessDays(p.ArrivalOn, rapid.IntRange(0, 2).Draw(t, "delay"))
		byBank[booked] = append(byBank[booked], bankstatement.Line{Key: fmt.Sprintf("ref:C%d", i), Amount: sum, Currency: "EUR",
			BookedOn: booked, Text: text, Format: "camt.053"})
	}
	sc.fault = rapid.SampledFrom([]string{"", "missing", "unknown", "return", "gap"}).Draw(t, "fault")
	last := bankstatement.AddBusinessDays(start, 8+2+5+1) // past every window
	switch sc.fault {
	case "missing":
		// drop a credit that banks exactly one payout
		for d, ls := range byBank {
			for k, l := range ls {
				for _, p := range sc.payouts {
					if p.Amount == l.Amount && sc.item == "" {
						byBank[d] = append(ls[:k:k], ls[k+1:]...)
						sc.unbanked, sc.item = p.Amount, "payout_not_received "+p.Key()
					}
				}
				if sc.item != "" {
					break
				}
			}
			if sc.item != "" {
				break
			}
		}
		if sc.item == "" {
			sc.fault = "" // every credit banked several payouts
		}
	case "unknown":
		d := bankstatement.AddBusinessDays(start, 3)
		byBank[d] = append(byBank[d], bankstatement.Line{Key: "ref:UNKNOWN", Amount: 1, Currency: "EUR", BookedOn: d, Format: "camt.053"})
		sc.item = "unidentified_deposit ref:UNKNOWN"
	case "return":
		p := sc.payouts[0]
		// its credit, booked alone and on time, then returned after the last credit
		for _, ls := range byBank {
			for _, l := range ls {
				if l.Amount == p.Amount {
					sc.item = "payout_returned " + p.Key() // its credit banked it alone
				}
			}
		}
		if sc.item == "" {
			sc.fault = ""
			break
		}
		d := bankstatement.AddBusinessDays(start, 12)
		byBank[d] = append(byBank[d], bankstatement.Line{Key: "ref:RETURN", Amount: -p.Amount, Currency: "EUR", BookedOn: d,
			Reversal: true, Text: "RETURN " + p.ID, Format: "camt.053"})
		sc.unbanked = p.Amount
	}
	// One statement per calendar day (weekends empty), numbered; "gap"
	// leaves out a weekend's empty statement.
	var seq int64
	for d := start; !d.After(last); d = d.AddDate(0, 0, 1) {
		seq++
		if sc.fault == "gap" && d.Weekday() == time.Saturday && sc.item == "" {
			sc.item = "statement_gap seq:" + strconv.FormatInt(seq, 10)
			continue
		}
		sc.statements = append(sc.statements, genStatement{seq: seq, day: d, lines: byBank[d]})
	}
	return sc
}

// deliveries are a scenario's inputs, each under its dedup key.
func (sc scenario) deliveries() []bankstatement.Delivery {
	var out []bankstatement.Delivery
	for _, p := range sc.payouts {
		p := p
		out = append(out, bankstatement.Delivery{DedupKey: "payout:" + p.Key(), Input: bankstatement.Input{Payout: &p}})
	}
	for _, st := range sc.statements {
		out = append(out, bankstatement.Delivery{DedupKey: fmt.Sprintf("stmt:%d", st.seq),
			Input: bankstatement.Input{Statement: &bankstatement.Statement{Format: "camt.053", Seq: st.seq, Covers: st.day, Entries: len(st.lines)}}})
		for _, l := range st.lines {
			l := l
			out = append(out, bankstatement.Delivery{DedupKey: "line:" + l.Key, Input: bankstatement.Input{Line: &l}})
		}
	}
	return out
}

// TestPropertyAnyOrder: whatever the order the payouts and the statement
// lines arrive in, and whatever arrives twice, bank:payouts ends holding
// the payouts not banked, and each fault opens exactly its one item (a
// clean run none).
func TestPropertyAnyOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := genScenario(t)
		ds := sc.deliveries()
		order := rapid.Permutation(ds).Draw(t, "order")
		for _, i := range rapid.SliceOfN(rapid.IntRange(0, len(ds)-1), 0, 5).Draw(t, "again") {
			order = append(order, ds[i])
		}
		s := bankstatement.NewState("main", 5)
		bal := map[string]int64{}
		var open = map[string]bool{}
		for _, p := range sc.payouts {
			bal[ledger.BankPayouts] += p.Amount // payout paid
		}
		decideOnce(t, s, order, bal, open)
		require.Equal(t, sc.unbanked, bal[ledger.BankPayouts], "bank:payouts holds the payouts not banked (fault %q)", sc.fault)
		want := map[string]bool{}
		if sc.item != "" {
			want[sc.item] = true
		}
		require.Equal(t, want, open, "fault %q", sc.fault)
	})
}

// decideOnce decides each delivery of order once (the inbox gate drops a
// delivery key seen before), adding the events' postings to bal and
// keeping open the items flagged and not cleared ("kind key").
func decideOnce(t require.TestingT, s *bankstatement.State, order []bankstatement.Delivery, bal map[string]int64, open map[string]bool) {
	seen := map[string]bool{}
	for _, d := range order {
		if seen[d.DedupKey] {
			continue // the inbox gate
		}
		seen[d.DedupKey] = true
		evs, err := s.Decide(d)
		require.NoError(t, err)
		for _, e := range evs {
			for _, p := range payment.Postings(e) {
				bal[p.Account] += p.Amount
			}
			switch e := e.(type) {
			case payment.Flagged:
				open[e.Kind+" "+e.Key] = true
			case payment.Cleared:
				delete(open, e.Kind+" "+e.Key)
			}
		}
	}
}
