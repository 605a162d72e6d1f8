package bookexport_test

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/bookexport"
	"github.com/onceledger/onceledger/domain/period"
)

// A provider's id is the accountant's key back to the provider's
// dashboard: beancount keeps it exactly (its strings escape '"' and '\'),
// quotes, backslashes, commas and Chinese included, as bean-query reads
// it back; only a line break, which no provider's id holds, becomes a
// space.
func TestExportsKeepProviderIDsExactly(t *testing.T) {
	zone := time.UTC
	ids := []string{`pi_"q"\z,1;x`, `订单\"`, "a\nb"}
	want := []string{`pi_"q"\z,1;x`, `订单\"`, "a b"}
	m := &memorySource{zone: zone}
	for i, id := range ids {
		m.event("stripe", "payment-stripe-"+id, "payment.captured", time.Date(2026, 11, 2+i, 9, 0, 0, 0, zone), period.Period{},
			"provider:stripe:balance", "USD", 100, "revenue:sales", "USD", -100)
	}
	x := &bookexport.Exporter{Source: m, Zone: zone}
	bean := export(t, x, bookexport.Beancount, "2026-11-01", "2026-12-01")
	out := tool(t, bean, "bean-query", "-f", "csv", "FILE", `SELECT DISTINCT entry_meta("payment-id") AS id, narration ORDER BY id`)
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	require.NoError(t, err, out)
	require.Len(t, recs, 4, out)
	got := map[string]string{}
	for _, r := range recs[1:] {
		got[strings.TrimSpace(r[0])] = strings.TrimSpace(r[1])
	}
	for _, id := range want {
		assert.Equal(t, "payment.captured "+id, got[id], "payment-id %q: %s", id, out)
	}
	tool(t, export(t, x, bookexport.Hledger, "2026-11-01", "2026-12-01"), "hledger", "-f", "FILE", "check", "-s")

	// The CSV files carry them too, byte for byte, in the descriptions
	// (Xero's column 3, QuickBooks' 4), whatever they hold.
	for f, col := range map[bookexport.Format]int{bookexport.Xero: 2, bookexport.QuickBooks: 3} {
		recs, err := csv.NewReader(bytes.NewReader(export(t, x, f, "2026-11-01", "2026-12-01"))).ReadAll()
		require.NoError(t, err)
		for _, id := range ids[:2] {
			found := false
			for _, r := range recs[1:] {
				require.Len(t, r, 6)
				found = found || strings.HasSuffix(r[col], " "+id)
			}
			assert.True(t, found, "%s: %q in %v", f, id, recs)
		}
	}
}

// Amounts at the gate's bound (10^15 minor units) in currencies of 0, 2
// and 3 decimals, their balances near int64's range (3×10^18): each tool
// reads them back to the minor unit, as opening balances too.
func TestHugeAmountsExact(t *testing.T) {
	zone := time.UTC
	m := &memorySource{zone: zone}
	const bound = 1_000_000_000_000_000
	for i := range 3000 {
		c := []string{"JPY", "USD", "BHD"}[i%3]
		m.event("stripe", "payment-stripe-big", "payment.captured", time.Date(2026, 11, 1+i%30, 9, 0, 0, 0, zone), period.Period{},
			"provider:stripe:balance", c, bound-1, "expenses:fees:stripe", c, 1, "revenue:sales", c, -bound)
	}
	m.event("stripe", "payment-stripe-big", "refund.succeeded", time.Date(2026, 12, 2, 9, 0, 0, 0, zone), period.Period{},
		"revenue:refunds", "BHD", bound, "provider:stripe:balance", "BHD", -bound)
	x := &bookexport.Exporter{Source: m, Zone: zone}
	for _, from := range []string{"2026-11-01", "2026-12-01"} {
		to := "2027-01-01"
		assert.Equal(t, sums(t, m, bookexport.Beancount, to), beanBalances(t, export(t, x, bookexport.Beancount, from, to)), from)
		assert.Equal(t, sums(t, m, bookexport.Hledger, to), hledgerBalances(t, export(t, x, bookexport.Hledger, from, to)), from)
		checkXero(t, export(t, x, bookexport.Xero, from, to), sums(t, m, bookexport.Xero, to))
		checkQuickBooks(t, export(t, x, bookexport.QuickBooks, from, to), sums(t, m, bookexport.QuickBooks, to))
	}
}

// A payout's deposit journal stands apart from its day's journal in the
// file: the rows of each journal are together (QuickBooks groups by
// Journal No., Xero by narration and date; an accountant reads them in
// order), whatever the day's order of events.
func TestJournalRowsAreContiguous(t *testing.T) {
	zone := time.UTC
	m := &memorySource{zone: zone}
	at := func(h int) time.Time { return time.Date(2026, 11, 2, h, 0, 0, 0, zone) }
	m.event("stripe", "payment-stripe-pi_1", "payment.captured", at(8), period.Period{},
		"provider:stripe:balance", "USD", 970, "expenses:fees:stripe", "USD", 30, "revenue:sales", "USD", -1000)
	m.event("stripe", "payout-stripe-po_1", "payout.paid", at(9), period.Period{},
		"bank:payouts", "USD", 970, "provider:stripe:balance", "USD", -970)
	m.event("stripe", "payment-stripe-pi_2", "payment.captured", at(10), period.Period{},
		"provider:stripe:balance", "USD", 485, "expenses:fees:stripe", "USD", 15, "revenue:sales", "USD", -500)
	x := &bookexport.Exporter{Source: m, Zone: zone, Deposits: true}
	for f, key := range map[bookexport.Format]func(r []string) string{
		bookexport.Xero:       func(r []string) string { return r[0] + r[1] },
		bookexport.QuickBooks: func(r []string) string { return r[0] },
	} {
		recs, err := csv.NewReader(bytes.NewReader(export(t, x, f, "2026-11-01", "2026-12-01"))).ReadAll()
		require.NoError(t, err)
		done := map[string]bool{}
		prev := ""
		for _, r := range recs[1:] {
			k := key(r)
			if k != prev {
				assert.False(t, done[k], "%s: journal %s resumes after another: %v", f, k, recs)
				done[k], prev = true, k
			}
		}
		assert.Len(t, done, 2, "%s: the day's journal and the payout's deposit journal", f)
	}
}
