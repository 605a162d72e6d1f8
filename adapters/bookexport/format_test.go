package bookexport_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/bookexport"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/period"
	"github.com/onceledger/onceledger/projections/views"
)

// memorySource is a Source over entries held in memory, filtered and
// ordered as the read model does (the read model's own tests run against
// Postgres): for the formats' unit tests.
type memorySource struct {
	zone    *time.Location
	entries []views.ExportEntry
}

func (m *memorySource) ExportAccounts(_ context.Context, before time.Time) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, e := range m.entries {
		if e.EffectiveAt.Before(before) && !seen[e.Account] {
			seen[e.Account] = true
			out = append(out, e.Account)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (m *memorySource) ExportJournal(_ context.Context, f views.ExportFilter,
	opening func([]views.ExportOpening) error, entry func(views.ExportEntry) error) error {
	from, to := f.From.Format(time.DateOnly), f.To.Format(time.DateOnly)
	sums := map[[2]string]int64{}
	var in []views.ExportEntry
	for _, e := range m.entries {
		switch {
		case e.Date < from:
			sums[[2]string{e.Account, string(e.Currency)}] += e.Amount
		case e.Date < to:
			in = append(in, e)
		}
	}
	var open []views.ExportOpening
	for k, v := range sums {
		if v != 0 {
			open = append(open, views.ExportOpening{Account: k[0], Currency: money.Currency(k[1]), Balance: v})
		}
	}
	sort.Slice(open, func(i, j int) bool {
		if open[i].Account != open[j].Account {
			return open[i].Account < open[j].Account
		}
		return open[i].Currency < open[j].Currency
	})
	if err := opening(open); err != nil {
		return err
	}
	sort.SliceStable(in, func(i, j int) bool {
		if in[i].Date != in[j].Date {
			return in[i].Date < in[j].Date
		}
		if f.ByCurrency && in[i].Currency != in[j].Currency {
			return in[i].Currency < in[j].Currency
		}
		return false
	})
	for _, e := range in {
		if err := entry(e); err != nil {
			return err
		}
	}
	return nil
}

// event appends one event's postings, dated at effective in zone (or, when
// late, the first day of the period booked).
func (m *memorySource) event(provider, stream, typ string, effective time.Time, booked period.Period, postings ...any) {
	id := uuid.New()
	date := effective.In(m.zone).Format(time.DateOnly)
	late := false
	var adjusts period.Period
	if !booked.IsZero() {
		late = true
		adjusts = period.Of(effective, m.zone)
		date = booked.Start(m.zone).Format(time.DateOnly)
	}
	for i := 0; i < len(postings); i += 3 {
		e := views.ExportEntry{StreamID: stream, EventType: typ, Amount: int64(postings[i+2].(int))}
		e.Account, e.Currency = postings[i].(string), money.Currency(postings[i+1].(string))
		e.EventID, e.Provider, e.Date, e.EffectiveAt = id, provider, date, effective
		e.LateAdjustment, e.Adjusts = late, adjusts
		m.entries = append(m.entries, e)
	}
}

// sampleBooks is a small multi-provider, multi-currency ledger with a late
// adjustment, an FX conversion and a payout banked.
func sampleBooks(zone *time.Location) *memorySource {
	m := &memorySource{zone: zone}
	day := func(d, h int) time.Time { return time.Date(2026, 11, d, h, 0, 0, 0, zone) }
	m.event("stripe", "payment-stripe-pi_1", "payment.captured", day(2, 10), period.Period{},
		"provider:stripe:balance", "USD", 9680, "expenses:fees:stripe", "USD", 320, "revenue:sales", "USD", -10000)
	m.event("adyen", "payment-adyen-PSP1", "payment.captured", day(3, 11), period.Period{},
		"provider:adyen:balance", "EUR", 4900, "expenses:fees:adyen", "EUR", 100, "revenue:sales", "EUR", -5000)
	m.event("wechatpay", "payment-wechatpay-42000", "payment.captured", day(3, 12), period.Period{},
		"provider:wechatpay:balance", "CNY", 9000, "expenses:discounts:wechatpay", "CNY", 1000, "revenue:sales", "CNY", -10000)
	m.event("standard", "payment-standard-pay_1", "payment.captured", day(4, 9), period.Period{},
		"provider:standard:balance", "JPY", 5000, "revenue:sales", "JPY", -5000)
	m.event("stripe", "payment-stripe-pi_1", "refund.succeeded", day(10, 9), period.Period{},
		"revenue:refunds", "USD", 1000, "provider:stripe:balance", "USD", -1000)
	m.event("stripe", "payout-stripe-po_1", "settlement.fx", day(12, 9), period.Period{},
		"provider:stripe:balance", "EUR", 900, "fx:trading", "USD", 1000, "provider:stripe:balance", "USD", -1000, "fx:trading", "EUR", -900)
	m.event("stripe", "payout-stripe-po_2", "payout.paid", day(20, 9), period.Period{},
		"bank:payouts", "USD", 7680, "provider:stripe:balance", "USD", -7680)
	m.event("bank", "bank-main_eur", "bank.payout_banked", day(22, 9), period.Period{},
		"bank:main_eur", "USD", 7680, "bank:payouts", "USD", -7680)
	m.event("bank", "bank-main_eur", "bank.unidentified", day(23, 9), period.Period{},
		"bank:main_eur", "USD", 55, "suspense:bank:main_eur", "USD", -55)
	m.event("paypal", "payment-paypal-CAP1", "payment.captured", day(25, 9), period.Period{},
		"provider:paypal:balance", "BHD", 10250, "revenue:sales", "BHD", -10250)
	// December: a late capture for November, booked into December.
	m.event("stripe", "payment-stripe-pi_9", "payment.captured", day(29, 23), period.MustParse("2026-12"),
		"provider:stripe:balance", "USD", 500, "revenue:sales", "USD", -500)
	m.event("stripe", "payment-stripe-pi_10", "payment.captured", time.Date(2026, 12, 5, 9, 0, 0, 0, zone), period.Period{},
		"provider:stripe:balance", "USD", 700, "revenue:sales", "USD", -700)
	return m
}

func export(t *testing.T, x *bookexport.Exporter, f bookexport.Format, from, to string) []byte {
	t.Helper()
	var buf bytes.Buffer
	req := bookexport.Request{Format: f, From: day(t, from, x.Zone), To: day(t, to, x.Zone)}
	require.NoError(t, x.Export(context.Background(), req, &buf))
	return buf.Bytes()
}

func day(t *testing.T, s string, zone *time.Location) time.Time {
	t.Helper()
	d, err := time.ParseInLocation(time.DateOnly, s, zone)
	require.NoError(t, err)
	return d
}

// tool runs one of the accountants' tools on a file holding body and
// returns its output; the tools must be installed (.ci/run installs
// Debian's beancount and hledger): a missing one fails the test.
func tool(t *testing.T, body []byte, name string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	require.NoError(t, err, "%s is required (apt-get install beancount hledger; .ci/run installs them)", name)
	file := filepath.Join(t.TempDir(), "books")
	require.NoError(t, os.WriteFile(file, body, 0o600))
	var cmdArgs []string
	for _, a := range args {
		if a == "FILE" {
			a = file
		}
		cmdArgs = append(cmdArgs, a)
	}
	cmd := exec.Command(path, cmdArgs...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %v: %s\n--- file:\n%s", name, args, out, body)
	return string(out)
}

func TestFormatsPassTheirTools(t *testing.T) {
	zone, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	m := sampleBooks(zone)
	x := &bookexport.Exporter{Source: m, Zone: zone}
	for _, r := range [][2]string{{"2026-11-01", "2026-12-01"}, {"2026-11-15", "2027-01-01"}} {
		bean := export(t, x, bookexport.Beancount, r[0], r[1])
		tool(t, bean, "bean-check", "FILE")
		hl := export(t, x, bookexport.Hledger, r[0], r[1])
		tool(t, hl, "hledger", "-f", "FILE", "check", "-s")
		// Their columns, each journal balanced, and the books' figures.
		checkXero(t, export(t, x, bookexport.Xero, r[0], r[1]), sums(t, m, bookexport.Xero, r[1]))
		checkQuickBooks(t, export(t, x, bookexport.QuickBooks, r[0], r[1]), sums(t, m, bookexport.QuickBooks, r[1]))
	}
}
