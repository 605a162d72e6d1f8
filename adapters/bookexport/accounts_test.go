package bookexport_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/bookexport"
	"github.com/onceledger/onceledger/domain/period"
)

// chart is every account of docs/reference.md's "Money and accounts", for
// every provider, with bank accounts of awkward names.
func chart() []string {
	out := []string{"revenue:sales", "revenue:refunds", "expenses:disputes", "expenses:writeoffs", "bank:payouts",
		"equity:opening_balances", "fx:trading"}
	for _, p := range []string{"stripe", "standard", "adyen", "paypal", "paypal-ipn", "square", "circle", "alipay", "wechatpay", "newpay_2"} {
		out = append(out, "provider:"+p+":balance", "provider:"+p+":reserve", "expenses:fees:"+p,
			"expenses:discounts:"+p, "receivable:disputes:"+p)
	}
	for _, b := range []string{"main", "operating_eur", "hsbc-gbp.2", "a-very-long-bank-account-name", "x--y", "trailing_"} {
		out = append(out, "bank:"+b, "suspense:bank:"+b)
	}
	return out
}

func TestDefaultTableNamesEveryAccountInEveryTool(t *testing.T) {
	table := bookexport.DefaultTable()
	for _, f := range bookexport.Formats {
		seen := map[string]string{}
		for _, a := range chart() {
			n, err := table.Name(f, a)
			require.NoError(t, err, "%s %s", f, a)
			if other, dup := seen[n]; dup {
				t.Errorf("%s: %s and %s are both %q", f, other, a, n)
			}
			seen[n] = a
		}
	}
	for a, want := range map[string]string{
		"provider:stripe:balance":        "Assets:Provider:Stripe:Balance",
		"provider:wechatpay:reserve":     "Assets:Provider:WeChatPay:Reserve",
		"expenses:discounts:alipay":      "Expenses:Discounts:Alipay",
		"bank:operating_eur":             "Assets:Bank:Operating-Eur",
		"suspense:bank:operating_eur":    "Liabilities:Suspense:Bank:Operating-Eur",
		"equity:opening_balances":        "Equity:Opening-Balances",
		"fx:trading":                     "Equity:FX-Trading",
		"receivable:disputes:paypal-ipn": "Assets:Receivable:Disputes:PayPal-IPN",
	} {
		n, err := table.Name(bookexport.Beancount, a)
		require.NoError(t, err)
		assert.Equal(t, want, n, a)
	}
	n, err := table.Name(bookexport.QuickBooks, "provider:stripe:balance")
	require.NoError(t, err)
	assert.Equal(t, "Payment Processors:Stripe Balance", n)
	n, err = table.Name(bookexport.Xero, "expenses:fees:adyen")
	require.NoError(t, err)
	assert.Equal(t, "6103", n)
	n, err = table.Name(bookexport.Xero, "bank:main")
	require.NoError(t, err)
	assert.Equal(t, "BMAIN", n)
	// Another provider (docs/accountants.md): its name when at most 8
	// letters and digits, else 8 hex digits of its SHA-256.
	n, err = table.Name(bookexport.Xero, "provider:newpay:balance")
	require.NoError(t, err)
	assert.Equal(t, "11NEWPAY", n)
	n, err = table.Name(bookexport.Xero, "provider:newpay_2:balance")
	require.NoError(t, err)
	assert.Regexp(t, `^11[0-9A-F]{8}$`, n)
}

func TestAnAccountTheTableCannotNameIsAnErrorNamingIt(t *testing.T) {
	table := bookexport.DefaultTable()
	for _, a := range []string{"assets:cash", "provider:stripe", "bank:main eur", "expenses:fees:a b", "bank:_x", "bank:bänk"} {
		_, err := table.Name(bookexport.Beancount, a)
		require.Error(t, err, a)
		assert.True(t, errors.Is(err, bookexport.ErrUnmappedAccount), a)
		assert.Contains(t, err.Error(), `"`+a+`"`)
	}
	// Two accounts whose default names meet are refused, naming both,
	// never merged; an override tells them apart.
	zone := time.UTC
	m := sampleBooks(zone)
	m.event("bank", "bank-a", "bank.unidentified", time.Date(2026, 11, 5, 0, 0, 0, 0, zone), period.Period{},
		"bank:a_b", "USD", 1, "suspense:bank:a_b", "USD", -1)
	m.event("bank", "bank-b", "bank.unidentified", time.Date(2026, 11, 5, 0, 0, 0, 0, zone), period.Period{},
		"bank:a-b", "USD", 1, "suspense:bank:a-b", "USD", -1)
	x := &bookexport.Exporter{Source: m, Zone: zone}
	var out bytes.Buffer
	err := x.Export(context.Background(), bookexport.Request{Format: bookexport.Beancount,
		From: day(t, "2026-11-01", zone), To: day(t, "2026-12-01", zone)}, &out)
	require.ErrorIs(t, err, bookexport.ErrUnmappedAccount)
	assert.Contains(t, err.Error(), "bank:a-b")
	assert.Contains(t, err.Error(), "bank:a_b")
	assert.Zero(t, out.Len())
	x.Accounts, err = bookexport.ParseTable(strings.NewReader("bank:a_b=Assets:Bank:AB1\nsuspense:bank:a_b=Liabilities:Suspense:AB1\n"), "accounts.txt")
	require.NoError(t, err)
	tool(t, export(t, x, bookexport.Beancount, "2026-11-01", "2026-12-01"), "bean-check", "FILE")

	// An override the tool would refuse is refused too, never mangled.
	bad, err := bookexport.ParseTable(strings.NewReader("revenue:sales=Income:sales_eu\n[xero]\nrevenue:sales=SALES-EUROPE-1\n"), "accounts.txt")
	require.NoError(t, err)
	for _, f := range []bookexport.Format{bookexport.Beancount, bookexport.Xero} {
		_, err = bad.Name(f, "revenue:sales")
		require.ErrorIs(t, err, bookexport.ErrUnmappedAccount, f)
		assert.Contains(t, err.Error(), "revenue:sales")
	}

	// A QuickBooks name a spreadsheet would run as a formula is refused:
	// the CSV would carry it with a quote in front, an account
	// QuickBooks does not have.
	for _, n := range []string{"=Sales", "+Sales", "-Sales", "@Sales"} {
		qb, err := bookexport.ParseTable(strings.NewReader("[quickbooks]\nrevenue:sales="+n+"\n"), "accounts.txt")
		require.NoError(t, err)
		_, err = qb.Name(bookexport.QuickBooks, "revenue:sales")
		require.ErrorIs(t, err, bookexport.ErrUnmappedAccount, n)
		assert.Contains(t, err.Error(), "revenue:sales")
	}

	// The export refuses before it writes a byte.
	m = sampleBooks(zone)
	m.event("stripe", "payment-stripe-x", "adjustment", time.Date(2026, 11, 5, 0, 0, 0, 0, zone), period.Period{},
		"assets:petty_cash", "USD", 1, "revenue:sales", "USD", -1)
	var buf bytes.Buffer
	x = &bookexport.Exporter{Source: m, Zone: zone}
	err = x.Export(context.Background(), bookexport.Request{Format: bookexport.Hledger,
		From: day(t, "2026-11-01", zone), To: day(t, "2026-12-01", zone)}, &buf)
	require.ErrorIs(t, err, bookexport.ErrUnmappedAccount)
	assert.Contains(t, err.Error(), "assets:petty_cash")
	assert.Zero(t, buf.Len())
}

func TestOverridesRenameAccountsPerTool(t *testing.T) {
	file := `# the merchant's chart
revenue:sales = Income:Sales:Online
provider:stripe:balance=Assets:Stripe
[xero]
revenue:sales=4000
provider:stripe:balance=1200
[quickbooks]
revenue:sales=Income:Online Sales
`
	table, err := bookexport.ParseTable(strings.NewReader(file), "accounts.txt")
	require.NoError(t, err)
	for _, c := range []struct {
		f          bookexport.Format
		acct, want string
	}{
		{bookexport.Beancount, "revenue:sales", "Income:Sales:Online"},
		{bookexport.Hledger, "provider:stripe:balance", "Assets:Stripe"},
		{bookexport.Xero, "revenue:sales", "4000"},
		{bookexport.Xero, "provider:stripe:balance", "1200"},
		{bookexport.QuickBooks, "revenue:sales", "Income:Online Sales"},
		{bookexport.QuickBooks, "revenue:refunds", "Refunds"},
	} {
		n, err := table.Name(c.f, c.acct)
		require.NoError(t, err)
		assert.Equal(t, c.want, n, "%s %s", c.f, c.acct)
	}
	for _, bad := range []string{"revenue:sales\n", "=Income:X\n", "[gnucash]\n", "a=B\na=C\n"} {
		_, err := bookexport.ParseTable(strings.NewReader(bad), "accounts.txt")
		require.ErrorIs(t, err, bookexport.ErrBadTable, "%q", bad)
		assert.Contains(t, err.Error(), "accounts.txt line")
	}

	// The overridden names reach the file, and the tools take them.
	zone := time.UTC
	x := &bookexport.Exporter{Source: sampleBooks(zone), Zone: zone, Accounts: table}
	bean := export(t, x, bookexport.Beancount, "2026-11-01", "2026-12-01")
	tool(t, bean, "bean-check", "FILE")
	assert.Contains(t, string(bean), "Income:Sales:Online")
	tool(t, export(t, x, bookexport.Hledger, "2026-11-01", "2026-12-01"), "hledger", "-f", "FILE", "check", "-s")
}

// A day with more postings than Xero takes in one journal is split into
// journals of whole events, each balanced and within the bound.
func TestXeroSplitsABusyDayIntoBalancedJournals(t *testing.T) {
	zone := time.UTC
	m := &memorySource{zone: zone}
	for i := range 400 {
		m.event("stripe", "payment-stripe-pi", "payment.captured", time.Date(2026, 11, 2, 10, 0, i, 0, zone), period.Period{},
			"provider:stripe:balance", "USD", 970+i, "expenses:fees:stripe", "USD", 30, "revenue:sales", "USD", -1000-i)
	}
	x := &bookexport.Exporter{Source: m, Zone: zone}
	recs, err := csv.NewReader(bytes.NewReader(export(t, x, bookexport.Xero, "2026-11-01", "2026-12-01"))).ReadAll()
	require.NoError(t, err)
	lines := map[string]int{}
	for _, r := range recs[1:] {
		lines[r[0]]++
	}
	assert.Len(t, lines, 4, "1,200 lines in journals of at most 300: four")
	for j, n := range lines {
		assert.LessOrEqual(t, n, bookexport.XeroMaxLines, j)
		assert.Zero(t, n%3, "%s holds whole events", j)
	}
	checkXero(t, export(t, x, bookexport.Xero, "2026-11-01", "2026-12-01"), map[[2]string]int64{
		{"1101", "USD"}: int64(400*970 + 399*400/2), {"6101", "USD"}: 400 * 30, {"200", "USD"}: -int64(400*1000 + 399*400/2)})
}

// Opening balances of more accounts than a Xero journal holds are split
// too, each journal balanced against equity:opening_balances.
func TestXeroSplitsLargeOpeningBalances(t *testing.T) {
	zone := time.UTC
	m := &memorySource{zone: zone}
	for i := range 400 {
		m.event("bank", "bank-x", "bank.unidentified", time.Date(2026, 11, 2, 10, 0, 0, 0, zone), period.Period{},
			fmt.Sprintf("bank:b%d", i), "USD", 100+i, fmt.Sprintf("suspense:bank:b%d", i), "USD", -100-i)
	}
	x := &bookexport.Exporter{Source: m, Zone: zone}
	file := export(t, x, bookexport.Xero, "2026-12-01", "2027-01-01")
	want := map[[2]string]int64{}
	for i := range 400 {
		want[[2]string{fmt.Sprintf("BB%d", i), "USD"}] = int64(100 + i)
		want[[2]string{fmt.Sprintf("SB%d", i), "USD"}] = -int64(100 + i)
	}
	checkXero(t, file, want)
	assert.Equal(t, 3, strings.Count(string(file), `,"opening balances",`), "800 lines: three journals of at most 299 and their counterpart")
}

// An account first used after a range does not fail the range's export:
// a closed period's export is the same file whenever it is made, even
// once the books hold accounts whose default names meet (December's), which
// December's export refuses, naming them.
func TestALaterAccountDoesNotFailAnEarlierExport(t *testing.T) {
	zone := time.UTC
	m := sampleBooks(zone)
	x := &bookexport.Exporter{Source: m, Zone: zone}
	before := export(t, x, bookexport.Beancount, "2026-11-01", "2026-12-01")
	m.event("bank", "bank-a", "bank.unidentified", time.Date(2026, 12, 5, 0, 0, 0, 0, zone), period.Period{},
		"bank:a_b", "USD", 1, "suspense:bank:a_b", "USD", -1)
	m.event("bank", "bank-b", "bank.unidentified", time.Date(2026, 12, 6, 0, 0, 0, 0, zone), period.Period{},
		"bank:a-b", "USD", 1, "suspense:bank:a-b", "USD", -1)
	assert.Equal(t, string(before), string(export(t, x, bookexport.Beancount, "2026-11-01", "2026-12-01")))
	var out bytes.Buffer
	err := x.Export(context.Background(), bookexport.Request{Format: bookexport.Beancount,
		From: day(t, "2026-12-01", zone), To: day(t, "2027-01-01", zone)}, &out)
	require.ErrorIs(t, err, bookexport.ErrUnmappedAccount)
	assert.Contains(t, err.Error(), "bank:a-b")
	assert.Zero(t, out.Len())
}
