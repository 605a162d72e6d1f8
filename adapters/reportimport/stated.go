package reportimport

import (
	"context"
	"fmt"
	"time"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/money"
)

// Asserter records the balances a file states as balance assertions
// (operations.Balances; docs/reference.md, "Provider balances").
type Asserter interface {
	State(ctx context.Context, s assertion.Statement) (int, error)
}

// statedBalances collects the balances a file states, per account and
// currency, in file order. Several lines sharing one moment state one
// balance: the one after the last of them.
type statedBalances struct {
	order []statedKey
	byKey map[statedKey]*statedSeries
}

type statedKey struct{ account, currency string }

type statedSeries struct {
	source string
	points []assertion.Point
	at     map[time.Time]int // AsOf (UTC) → index in points
}

func newStatedBalances() *statedBalances {
	return &statedBalances{byKey: map[statedKey]*statedSeries{}}
}

func (c *statedBalances) add(s report.Stated) error {
	k := statedKey{s.Account, string(s.Currency)}
	ser, ok := c.byKey[k]
	if !ok {
		ser = &statedSeries{source: s.Source, at: map[time.Time]int{}}
		c.byKey[k] = ser
		c.order = append(c.order, k)
	}
	at := s.AsOf.UTC()
	// The key is the moment: the same moment stated by an overlapping file
	// is the same assertion (a different amount for it is a conflict).
	p := assertion.Point{Key: "at:" + at.Format(time.RFC3339Nano), AsOf: at, Amount: s.Amount}
	if i, ok := ser.at[at]; ok {
		ser.points[i] = p
		return nil
	}
	ser.at[at] = len(ser.points)
	ser.points = append(ser.points, p)
	return nil
}

// record states every collected series through a. It runs after the
// file's lines are recorded, so that the lines' own facts come first in the
// feed (an assertion is then checked once, not again for each line).
func (c *statedBalances) record(ctx context.Context, a Asserter, provider string) (int, error) {
	n := 0
	for _, k := range c.order {
		ser := c.byKey[k]
		st := assertion.Statement{Account: k.account, Currency: money.Currency(k.currency), Source: ser.source, Points: ser.points}
		m, err := a.State(ctx, st)
		if err != nil {
			return n, fmt.Errorf("%s: balances of %s %s: %w", provider, k.account, k.currency, err)
		}
		n += m
	}
	return n, nil
}

// StateBalances records balances a provider's API states (`settle sync
// stripe`: GET /v1/balance) as balance assertions; it returns how many
// were new. Without Balances it records nothing.
func (im *Importer) StateBalances(ctx context.Context, provider string, bs []report.Stated) (int, error) {
	if im.Balances == nil {
		return 0, nil
	}
	c := newStatedBalances()
	for _, b := range bs {
		if err := c.add(b); err != nil {
			return 0, err
		}
	}
	return c.record(ctx, im.Balances, provider)
}
