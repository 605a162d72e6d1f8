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
// about a closed period's end (its as_of just after a moment of that
// period) counts only when it was recorded by the period's close: a
// closed period's export shows the books as they were closed, so a
// statement imported later never changes it.
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
		// The balance at as_of closes the moment just before it.
		if at, closed := closedAt[period.Of(a.AsOf.Add(-time.Nanosecond), zone)]; closed && a.RecordedAt.After(at) {
			continue
		}
		out = append(out, Assertion{Account: a.Account, Currency: money.Currency(a.Currency), AsOf: a.AsOf,
			Stated: a.Stated, Provider: a.Provider, Source: a.Source})
	}
	return out, nil
}
