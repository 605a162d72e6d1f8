package bookexport_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/bookexport"
)

type fixedAssertions []bookexport.Assertion

func (f fixedAssertions) ExportAssertions(_ context.Context, from, to time.Time) ([]bookexport.Assertion, error) {
	var out []bookexport.Assertion
	for _, a := range f {
		if !a.AsOf.Before(from) && !a.AsOf.After(to) {
			out = append(out, a)
		}
	}
	return out, nil
}

// Assertions made at a day boundary that agree become balance directives
// dated the next day, which bean-check checks; the others are comments.
func TestBalanceAssertionsInBeancountAndHledger(t *testing.T) {
	zone, _ := time.LoadLocation("Europe/Berlin")
	midnight := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, zone) }
	asserts := fixedAssertions{
		// After 2 November (the pi_1 capture: 96.80 USD at Stripe).
		{Account: "provider:stripe:balance", Currency: "USD", AsOf: midnight(3), Stated: 9680, Provider: "stripe"},
		// After the refund of 10.00 on the 10th.
		{Account: "provider:stripe:balance", Currency: "USD", AsOf: midnight(11), Stated: 8680, Provider: "stripe"},
		{Account: "provider:adyen:balance", Currency: "EUR", AsOf: midnight(4), Stated: 4900, Provider: "adyen"},
		// Not at a day boundary, and one the ledger disagreed with.
		{Account: "provider:stripe:balance", Currency: "USD", AsOf: midnight(11).Add(time.Hour), Stated: 8680, Provider: "stripe"},
		{Account: "provider:adyen:balance", Currency: "EUR", AsOf: midnight(5), Stated: 1, Provider: "adyen"},
		// Agreed by effective time, but the late capture of 29 November
		// is dated 1 December in the export.
		{Account: "provider:stripe:balance", Currency: "USD", AsOf: midnight(30), Stated: 9680 - 1000 - 1000 - 7680 + 500, Provider: "stripe"},
	}
	x := &bookexport.Exporter{Source: sampleBooks(zone), Zone: zone, Assertions: asserts}
	bean := string(export(t, x, bookexport.Beancount, "2026-11-01", "2027-01-01"))
	tool(t, []byte(bean), "bean-check", "FILE")
	assert.Contains(t, bean, "2026-11-03 balance Assets:Provider:Stripe:Balance  96.80 ~ 0.00 USD")
	assert.Contains(t, bean, "2026-11-11 balance Assets:Provider:Stripe:Balance  86.80 ~ 0.00 USD")
	assert.Contains(t, bean, "2026-11-04 balance Assets:Provider:Adyen:Balance  49.00 ~ 0.00 EUR")
	assert.Equal(t, 3, strings.Count(bean, " balance Assets:"), bean)
	assert.Contains(t, bean, "not at a day boundary")
	assert.Contains(t, bean, "\n; 2026-11-05 balance assertion (adyen) that differs from the balance at this export's dates: Assets:Provider:Adyen:Balance 0.01 EUR, here 49.00 EUR\n")
	assert.Contains(t, bean, "\n; 2026-11-30 balance assertion (stripe) that differs from the balance at this export's dates: Assets:Provider:Stripe:Balance 5.00 USD, here 0.00 USD\n")
	// A directive one minor unit off fails bean-check: the check is real
	// (beancount's default tolerance would let it pass).
	broken := strings.Replace(bean, "balance Assets:Provider:Stripe:Balance  96.80", "balance Assets:Provider:Stripe:Balance  96.81", 1)
	assert.NotEqual(t, bean, broken)
	assert.Error(t, exec.Command("bean-check", writeTemp(t, broken)).Run())

	// hledger: the same three as balance assertions on postings of the
	// day before, which hledger check -s verifies.
	hl := string(export(t, x, bookexport.Hledger, "2026-11-01", "2027-01-01"))
	tool(t, []byte(hl), "hledger", "-f", "FILE", "check", "-s")
	assert.Contains(t, hl, "2026-11-02 * stripe | balance stated at the end of the day\n    Assets:Provider:Stripe:Balance  0.00 USD = 96.80 USD\n")
	assert.Equal(t, 3, strings.Count(hl, "balance stated at the end of the day"), hl)
	broken = strings.Replace(hl, "= 96.80 USD", "= 96.81 USD", 1)
	assert.NotEqual(t, hl, broken)
	assert.Error(t, exec.Command("hledger", "-f", writeTemp(t, broken), "check", "-s").Run())
}

func writeTemp(t *testing.T, body string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "books")
	require.NoError(t, os.WriteFile(f, []byte(body), 0o600))
	return f
}
