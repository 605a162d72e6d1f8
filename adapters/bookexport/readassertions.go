package bookexport

import (
	"context"
	"time"

	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/period"
	"github.com/onceledger/onceledger/projections/views"
)

// AssertionReader reads the balance assertions and the periods
// (readmodel.Store).
type AssertionReader interface {
	BalanceAssertions(ctx context.Context, f views.AssertionFilter) ([]views.BalanceAssertion, error)
	Periods(ctx context.Context) ([]views.PeriodInfo, error)
}

// ReadModelAssertions is Assertions over the read models. An assertion
// within a closed period of the export's range (at the range's end: about
// that period's end) counts only when it was recorded by the period's
// close: a closed period's export shows the books as they were closed, so
// a statement imported later never changes it.
type ReadModelAssertions struct {
	Reader AssertionReader
	Zone   *time.Location
}

var _ Assertions = ReadModelAssertions{}

// ExportAssertions returns the assertions with as_of in [from, to].
func (r ReadModelAssertions) ExportAssertions(ctx context.Context, from, to time.Time) ([]Assertion, error) {
	zone := r.Zone
	if zone == nil {
		zone = time.UTC
	}
	periods, err := r.Reader.Periods(ctx)
	if err != nil {
		return nil, err
	}
	closedAt := map[period.Period]time.Time{}
	for _, p := range periods {
		if p.Status == views.PeriodClosed && p.ClosedAt != nil {
			closedAt[p.Period] = *p.ClosedAt
		}
	}
	// as_of <= to: Postgres keeps microseconds (pgx truncates a
	// nanosecond away), so the bound past to is a microsecond past it;
	// as_of = to is the range's closing balance, the one most checked.
	rows, err := r.Reader.BalanceAssertions(ctx, views.AssertionFilter{From: from, To: to.Add(time.Microsecond)})
	if err != nil {
		return nil, err
	}
	var out []Assertion
	for _, a := range rows {
		// The period of the export the assertion checks: at the export's
		// end, the balance closing the moment just before it (the last
		// period of the range); elsewhere the one it opens (at from, the
		// range's first: December's export checks its opening balance
		// whenever it was stated, November's keeps what its close knew).
		in := a.AsOf
		if !a.AsOf.Before(to) {
			in = a.AsOf.Add(-time.Nanosecond)
		}
		if at, closed := closedAt[period.Of(in, zone)]; closed && a.RecordedAt.After(at) {
			continue
		}
		out = append(out, Assertion{Account: a.Account, Currency: money.Currency(a.Currency), AsOf: a.AsOf,
			Stated: a.Stated, Provider: a.Provider, Source: a.Source})
	}
	return out, nil
}
