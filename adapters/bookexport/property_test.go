package bookexport_test

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/bookexport"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/period"
)

// randomBooks is a ledger of n random balanced events over two months of
// the chart's accounts in currencies of 0, 2 and 3 decimals, amounts up to
// the gate's 10^15 minor units, some of the second month's events late
// adjustments for the first.
func randomBooks(rng *rand.Rand, zone *time.Location, n int) *memorySource {
	m := &memorySource{zone: zone}
	accounts := chart()
	currencies := []string{"USD", "JPY", "BHD", "EUR", "CNY"}
	for i := range n {
		effective := time.Date(2026, 11, 1, 0, 0, 0, 0, zone).Add(time.Duration(rng.Int64N(int64(60 * 24 * time.Hour))))
		var booked period.Period
		if effective.Month() == 11 && rng.IntN(8) == 0 {
			booked = period.MustParse("2026-12")
		}
		var postings []any
		for range 1 + rng.IntN(2) { // one or two currencies
			c := currencies[rng.IntN(len(currencies))]
			legs := 2 + rng.IntN(3)
			var sum int
			for l := range legs {
				a := accounts[rng.IntN(len(accounts))]
				amount := int(rng.Int64N(1_000_000_000_000_000)) - 500_000_000_000_000
				if rng.IntN(2) == 0 {
					amount /= 1_000_000_000 // mostly ordinary sizes
				}
				if l == legs-1 {
					amount = -sum
				}
				sum += amount
				postings = append(postings, a, c, amount)
			}
		}
		m.event("stripe", fmt.Sprintf("payment-stripe-pi_%d", i), "payment.captured", effective, booked, postings...)
	}
	return m
}

// sums is the balance of every account and currency over the entries
// dated before to, named as format f names them.
func sums(t *testing.T, m *memorySource, f bookexport.Format, to string) map[[2]string]int64 {
	t.Helper()
	table := bookexport.DefaultTable()
	out := map[[2]string]int64{}
	for _, e := range m.entries {
		if e.Date >= to {
			continue
		}
		n, err := table.Name(f, e.Account)
		require.NoError(t, err)
		out[[2]string{n, string(e.Currency)}] += e.Amount
	}
	for k, v := range out {
		if v == 0 {
			delete(out, k)
		}
	}
	return out
}

// propertyRuns is the first seed and the number of cases of a property
// test: ONCELEDGER_TEST_PROPERTY_RUNS=N runs N (default 2),
// ONCELEDGER_TEST_PROPERTY_SEED replays one.
func propertyRuns() (seed uint64, runs int) {
	runs = 2
	if v, err := strconv.Atoi(os.Getenv("ONCELEDGER_TEST_PROPERTY_RUNS")); err == nil && v > 0 {
		runs = v
	}
	seed = uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("ONCELEDGER_TEST_PROPERTY_SEED"), 10, 64); err == nil {
		seed, runs = v, 1
	}
	return seed, runs
}

// Random ledgers, exported from their first day and from a later one:
// every file passes its tool, and its balances are the ledger's.
// ONCELEDGER_TEST_PROPERTY_RUNS=N runs N cases (default 2);
// ONCELEDGER_TEST_PROPERTY_SEED replays one.
func TestRandomBooksPassTheTools(t *testing.T) {
	seed, runs := propertyRuns()
	zone, err := time.LoadLocation("America/Los_Angeles")
	require.NoError(t, err)
	for r := range runs {
		s := seed + uint64(r)
		t.Run(fmt.Sprint(s), func(t *testing.T) {
			m := randomBooks(rand.New(rand.NewPCG(s, s)), zone, 60)
			x := &bookexport.Exporter{Source: m, Zone: zone}
			for _, from := range []string{"2026-11-01", "2026-11-17", "2026-12-01"} {
				to := "2027-01-01"
				bean := export(t, x, bookexport.Beancount, from, to)
				assert.Equal(t, sums(t, m, bookexport.Beancount, to), beanBalances(t, bean), "seed %d from %s: beancount", s, from)
				hl := export(t, x, bookexport.Hledger, from, to)
				assert.Equal(t, sums(t, m, bookexport.Hledger, to), hledgerBalances(t, hl), "seed %d from %s: hledger", s, from)
				checkXero(t, export(t, x, bookexport.Xero, from, to), sums(t, m, bookexport.Xero, to))
				checkQuickBooks(t, export(t, x, bookexport.QuickBooks, from, to), sums(t, m, bookexport.QuickBooks, to))
			}
		})
	}
}

// The Xero and QuickBooks files of a random ledger keep their columns
// whatever the ids hold (quotes, commas, a leading '=').
func TestJournalCSVNeutralizesIDs(t *testing.T) {
	zone := time.UTC
	m := &memorySource{zone: zone}
	m.event("stripe", `payment-stripe-=HYPERLINK("x"),1`, "payment.captured", time.Date(2026, 11, 2, 0, 0, 0, 0, zone), period.Period{},
		"provider:stripe:balance", "USD", 100, "revenue:sales", "USD", -100)
	x := &bookexport.Exporter{Source: m, Zone: zone}
	for _, f := range []bookexport.Format{bookexport.Xero, bookexport.QuickBooks} {
		recs, err := csv.NewReader(bytes.NewReader(export(t, x, f, "2026-11-01", "2026-12-01"))).ReadAll()
		require.NoError(t, err)
		require.Len(t, recs, 3)
		for _, r := range recs[1:] {
			assert.Len(t, r, 6)
			assert.False(t, strings.HasPrefix(r[2], "="), r)
			assert.False(t, strings.HasPrefix(r[3], "="), r)
		}
	}
	bean := export(t, x, bookexport.Beancount, "2026-11-01", "2026-12-01")
	tool(t, bean, "bean-check", "FILE")
	tool(t, export(t, x, bookexport.Hledger, "2026-11-01", "2026-12-01"), "hledger", "-f", "FILE", "check", "-s")
}

var (
	balanceDirective = regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\d balance `)
	balanceAmount    = regexp.MustCompile(`(?m)^(\d{4}-\d\d-\d\d balance \S+  )(-?[0-9.]+) ~ \S+ ([A-Z]{3})$`)
)

// Random ledgers with balance assertions at random midnights, half of them
// the balance by the export's dates (they become beancount balance
// directives and hledger assertions, which the tools verify), half off by
// one minor unit (comments): every file passes its tool, with exactly the
// agreeing ones as directives.
func TestRandomAssertionsPassTheTools(t *testing.T) {
	seed, runs := propertyRuns()
	zone, err := time.LoadLocation("Asia/Tokyo")
	require.NoError(t, err)
	for r := range runs {
		s := seed + uint64(r)
		t.Run(fmt.Sprint(s), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(s, s))
			m := randomBooks(rng, zone, 60)
			var asserts fixedAssertions
			agreeing := map[string]int{} // by export start
			starts := []string{"2026-11-01", "2026-11-17", "2026-12-01"}
			for range 40 {
				e := m.entries[rng.IntN(len(m.entries))]
				at := time.Date(2026, 11, 1+rng.IntN(61), 0, 0, 0, 0, zone)
				d := at.Format(time.DateOnly)
				var bal int64
				for _, x := range m.entries {
					if x.Account == e.Account && x.Currency == e.Currency && x.Date < d {
						bal += x.Amount
					}
				}
				agree := rng.IntN(2) == 0
				if !agree {
					bal++
				}
				asserts = append(asserts, bookexport.Assertion{Account: e.Account, Currency: e.Currency, AsOf: at, Stated: bal, Provider: "stripe"})
				for _, from := range starts {
					if agree && d >= from {
						agreeing[from]++
					}
				}
			}
			sort.SliceStable(asserts, func(i, j int) bool { return asserts[i].AsOf.Before(asserts[j].AsOf) })
			x := &bookexport.Exporter{Source: m, Zone: zone, Assertions: asserts}
			for _, from := range starts {
				to := "2027-01-01"
				bean := export(t, x, bookexport.Beancount, from, to)
				tool(t, bean, "bean-check", "FILE")
				assert.Len(t, balanceDirective.FindAll(bean, -1), agreeing[from], "seed %d from %s", s, from)
				// Each directive is exact: one minor unit off fails
				// bean-check, in every currency's precision.
				if m := balanceAmount.FindSubmatchIndex(bean); m != nil {
					c := money.Currency(bean[m[6]:m[7]])
					v, err := money.ParseMajor(string(bean[m[4]:m[5]]), c)
					require.NoError(t, err)
					off := slices.Concat(bean[:m[4]], []byte(money.FormatMinor(v+1, c)), bean[m[5]:])
					assert.Error(t, exec.Command("bean-check", writeTemp(t, string(off))).Run(), "seed %d from %s: %s", s, from, bean[m[0]:m[1]])
				}
				hl := export(t, x, bookexport.Hledger, from, to)
				tool(t, hl, "hledger", "-f", "FILE", "check", "-s")
				assert.Equal(t, agreeing[from], strings.Count(string(hl), "balance stated at the end of the day"), "seed %d from %s", s, from)
			}
		})
	}
}
