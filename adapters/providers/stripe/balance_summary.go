package stripe

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/domain/ledger"
)

// The balance summary report (`balance.summary.1`, CSV;
// https://docs.stripe.com/reports/balance and the report type's schema):
// one row per category and currency, columns category, description,
// net_amount (major units) and currency. Its starting_balance and
// ending_balance rows state the Stripe balance at the start and the end of
// the report's interval; the other categories (activity, payouts) are sums
// the balance transactions already tell, so the file records no line: only
// its two balances per currency, as balance assertions (issue 35). The
// interval's dates are in the description ("… (2026-11-01)"; the schema
// gives no column for them); its zone is the report run's timezone
// parameter, UTC unless the upload says otherwise (report.Options.Zone).
// A balance at the start of day D is stated as of the last microsecond
// before D; at the end of day D, as of the last microsecond of D (the
// ledger keeps times to the microsecond): the ledger's balance "as of"
// counts entries at or before the moment.

// isBalanceSummary reports whether a CSV header is the balance summary's.
func isBalanceSummary(c *report.CSV) bool {
	return c.Has("category") && c.Has("net_amount") && !c.Has("balance_transaction_id")
}

var summaryDate = regexp.MustCompile(`\d{4}-\d{2}-\d{2}`)

// parseBalanceSummary reads the rows after the header.
func parseBalanceSummary(c *report.CSV, opt report.Options) error {
	if err := c.Require("category", "description", "net_amount", "currency"); err != nil {
		return err
	}
	zone := opt.Zone
	if zone == nil {
		zone = time.UTC
	}
	for {
		if err := c.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if c.Len() == 1 && c.Field(0) == "" {
			continue
		}
		cat := c.Get("category")
		if cat != "starting_balance" && cat != "ending_balance" {
			continue
		}
		cur, err := report.Currency(c.Get("currency"))
		if err != nil {
			return c.Err("currency", err)
		}
		amount, err := report.Major(c.Get("net_amount"), cur, opt.DecimalSeparator)
		if err != nil {
			return c.Err("net_amount", err)
		}
		dates := summaryDate.FindAllString(c.Get("description"), -1)
		if len(dates) == 0 {
			return c.Err("description", fmt.Errorf("no date (YYYY-MM-DD) in %q: the interval's dates are in the description", c.Get("description")))
		}
		d := dates[0]
		if cat == "ending_balance" {
			d = dates[len(dates)-1]
		}
		day, err := time.ParseInLocation("2006-01-02", d, zone)
		if err != nil {
			return c.Err("description", err)
		}
		if cat == "ending_balance" {
			day = day.AddDate(0, 0, 1)
		}
		if opt.Stated == nil {
			continue
		}
		if err := opt.Stated(report.Stated{Account: ledger.ProviderBalance(Name), Currency: cur, AsOf: day.Add(-time.Microsecond),
			Amount: amount, Source: "stripe balance summary (" + cat + ")"}); err != nil {
			return err
		}
	}
}
