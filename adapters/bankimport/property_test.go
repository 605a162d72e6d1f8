package bankimport_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/onceledger/onceledger/adapters/bankimport"
	"github.com/onceledger/onceledger/domain/bankline"
	"github.com/onceledger/onceledger/domain/bankstatement"
	"github.com/onceledger/onceledger/domain/ledger"
)

// bankScenario is a generated fortnight: payouts of several providers, the
// camt.053 statements (one a calendar day, numbered) that bank them, split
// into files, and at most one fault.
type bankScenario struct {
	payouts  []bankline.Payout
	files    []string
	unbanked int64  // what bank:payouts ends with
	item     string // the one item the fault opens ("" for a clean run)
	fault    string
}

func genBank(t *rapid.T, prefix string) bankScenario {
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC) // a Monday
	var sc bankScenario
	used := map[int64]bool{}
	n := rapid.IntRange(1, 10).Draw(t, "payouts")
	for i := 0; i < n; i++ {
		a := rapid.Int64Range(1_000, 9_000_000).Draw(t, "amount")
		for used[a] {
			a++
		}
		used[a] = true
		sc.payouts = append(sc.payouts, bankline.Payout{Provider: rapid.SampledFrom([]string{"stripe", "adyen", "paypal"}).Draw(t, "provider"),
			ID: fmt.Sprintf("%spo_%02d", prefix, i), Amount: a, Currency: "EUR", ArrivalOn: bankline.AddBusinessDays(start, rapid.IntRange(0, 6).Draw(t, "arrival"))})
	}
	byDay := map[time.Time][]entry{}
	done := map[int]bool{}
	for i, p := range sc.payouts {
		if done[i] {
			continue
		}
		sum, members := int64(0), []int{i}
		if rapid.Bool().Draw(t, "combine") {
			for j := i + 1; j < len(sc.payouts) && len(members) < 8; j++ {
				if q := sc.payouts[j]; !done[j] && q.Provider == p.Provider && q.ArrivalOn.Equal(p.ArrivalOn) {
					members = append(members, j)
				}
			}
		}
		for _, m := range members {
			done[m] = true
			sum += sc.payouts[m].Amount
		}
		text := ""
		if len(members) == 1 && rapid.Bool().Draw(t, "reference") {
			text = "PAYOUT " + p.ID
		}
		d := bankline.AddBusinessDays(p.ArrivalOn, rapid.IntRange(0, 2).Draw(t, "delay"))
		byDay[d] = append(byDay[d], entry{amount: sum, ref: fmt.Sprintf("C%02d", i), text: text})
	}
	sc.fault = rapid.SampledFrom([]string{"", "missing", "unknown", "return", "gap"}).Draw(t, "fault")
	switch sc.fault {
	case "missing", "return":
		p := sc.payouts[0]
		for d, es := range byDay {
			for k, e := range es {
				if e.amount != p.Amount {
					continue // banks several payouts: not this fault's line
				}
				if sc.fault == "missing" {
					byDay[d] = append(es[:k:k], es[k+1:]...)
					sc.item = "payout_not_received " + p.Key()
				} else {
					r := bankline.AddBusinessDays(start, 11)
					byDay[r] = append(byDay[r], entry{amount: -p.Amount, ref: "RETURN", text: "RETURN " + p.ID, reversal: true})
					sc.item = "payout_returned " + p.Key()
				}
				sc.unbanked = p.Amount
				break
			}
		}
		if sc.item == "" {
			sc.fault = ""
		}
	case "unknown":
		d := bankline.AddBusinessDays(start, 2)
		byDay[d] = append(byDay[d], entry{amount: 1, ref: "UNKNOWN"})
		sc.item = "unidentified_deposit ref:UNKNOWN"
	}
	var stmts []camtStmt
	var seq, balance int64
	last := bankline.AddBusinessDays(start, 6+2+5+2)
	for d := start; !d.After(last); d = d.AddDate(0, 0, 1) {
		seq++
		st := camtStmt{seq: seq, on: d, opening: balance, entries: byDay[d]}
		for _, e := range st.entries {
			balance += e.amount
		}
		if sc.fault == "gap" && sc.item == "" && d.Weekday() == time.Saturday {
			sc.item = fmt.Sprintf("statement_gap seq:%d", seq)
			continue // a weekend's empty statement never arrives
		}
		stmts = append(stmts, st)
	}
	for i := 0; i < len(stmts); {
		k := rapid.IntRange(1, 3).Draw(t, "per file")
		if i+k > len(stmts) {
			k = len(stmts) - i
		}
		sc.files = append(sc.files, camtDoc("camt.053", stmts[i:i+k]))
		i += k
	}
	return sc
}

// TestPropertyStatementsAnyOrderBothStores: the statements that pay
// payouts of several providers, split into files imported in any order
// (some twice), with the payouts known before, between or after them:
// bank:payouts ends holding the payouts not banked, and each fault opens
// exactly one item, a clean run none. Small by default;
// ONCELEDGER_BANK_PROPERTY_CHECKS runs more.
func TestPropertyStatementsAnyOrderBothStores(t *testing.T) {
	n := 0
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				n++
				account := fmt.Sprintf("prop-%s-%d", st.name, n)
				sc := genBank(rt, "")
				ps := &payouts{}
				im := &bankimport.Importer{Ingest: st.svc, Payouts: ps}
				idx := make([]int, len(sc.files))
				for i := range idx {
					idx[i] = i
				}
				order := rapid.Permutation(idx).Draw(rt, "file order")
				order = append(order, rapid.SliceOfN(rapid.SampledFrom(idx), 0, 2).Draw(rt, "files again")...)
				reveal := rapid.Permutation(sc.payouts).Draw(rt, "reveal")
				ctx := context.Background()
				for _, f := range order {
					k := rapid.IntRange(0, len(reveal)).Draw(rt, "revealed")
					ps.mu.Lock()
					if k > len(ps.list) {
						ps.list = append([]bankline.Payout(nil), reveal[:k]...)
					}
					ps.mu.Unlock()
					_, err := im.Import(ctx, account, src(sc.files[f]))
					require.NoError(rt, err)
				}
				ps.mu.Lock()
				ps.list = reveal
				ps.mu.Unlock()
				_, err := im.Match(ctx, account)
				require.NoError(rt, err)

				bal, open := ledgerOf(t, st, account)
				paid := int64(0)
				for _, p := range sc.payouts {
					paid += p.Amount
				}
				require.Equal(rt, sc.unbanked, paid+bal[ledger.BankPayouts], "bank:payouts holds the payouts not banked (fault %q)", sc.fault)
				want := map[string]bool{}
				if sc.item != "" {
					want[sc.item] = true
				}
				require.Equal(rt, want, open, "fault %q", sc.fault)
				require.Zero(rt, bal[bankstatement.Suspense(account)]+unknown(sc), "suspense holds only the unknown deposit")
			})
		})
	}
}

// TestMain keeps the property test small by default (each check imports a
// fortnight of statements into both stores): -rapid.checks or
// ONCELEDGER_BANK_PROPERTY_CHECKS asks for more.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set {
		_ = flag.Set("rapid.checks", strconv.Itoa(propertyChecks()))
	}
	os.Exit(m.Run())
}

// TestPropertyPayoutsFromTheLedgerBothStores: as above, the payouts now
// paid by real deliveries (payout.paid, with the provider's arrival date)
// interleaved with the statement files, and told to the account by the
// payouts read model (the importer's port in serve), the projections
// caught up between imports as they would be.
func TestPropertyPayoutsFromTheLedgerBothStores(t *testing.T) {
	n := 0
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				n++
				account := fmt.Sprintf("ledger-%s-%d", st.name, n)
				sc := genBank(rt, account+"-")
				ps := prefixed{st.reads, account + "-"}
				im := &bankimport.Importer{Ingest: st.svc, Payouts: ps}
				ctx := context.Background()
				pending := rapid.Permutation(sc.payouts).Draw(rt, "payout order")
				pay := func(k int) {
					for ; k > 0 && len(pending) > 0; k-- {
						p := pending[0]
						pending = pending[1:]
						// reported paid a week before it arrives: the window
						// is the arrival date's
						_, err := st.svc.Ingest(ctx, paid(p.Provider, p.ID, p.Amount, p.ArrivalOn.AddDate(0, 0, -7), p.ArrivalOn))
						require.NoError(rt, err)
					}
					catchUp(t, st.proj)
				}
				idx := make([]int, len(sc.files))
				for i := range idx {
					idx[i] = i
				}
				for _, f := range rapid.Permutation(idx).Draw(rt, "file order") {
					pay(rapid.IntRange(0, 3).Draw(rt, "paid before the file"))
					_, err := im.Import(ctx, account, src(sc.files[f]))
					require.NoError(rt, err)
				}
				pay(len(pending))
				_, err := im.Match(ctx, account)
				require.NoError(rt, err)

				bal, open := ledgerOf(t, st, account)
				paidOut := int64(0)
				for _, p := range sc.payouts {
					paidOut += p.Amount
				}
				require.Equal(rt, sc.unbanked, paidOut+bal[ledger.BankPayouts], "fault %q", sc.fault)
				want := map[string]bool{}
				if sc.item != "" {
					want[sc.item] = true
				}
				require.Equal(rt, want, open, "fault %q", sc.fault)
			})
		})
	}
}

// prefixed is the payouts read model's port limited to one check's
// payouts (the database is shared by the checks).
type prefixed struct {
	reads  bankimport.Payouts
	prefix string
}

func (p prefixed) UnbankedPayouts(ctx context.Context) ([]bankline.Payout, error) {
	all, err := p.reads.UnbankedPayouts(ctx)
	var out []bankline.Payout
	for _, x := range all {
		if strings.HasPrefix(x.ID, p.prefix) {
			out = append(out, x)
		}
	}
	return out, err
}

func unknown(sc bankScenario) int64 {
	if sc.fault == "unknown" {
		return 1
	}
	return 0
}
