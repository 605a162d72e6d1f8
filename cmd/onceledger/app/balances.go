package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/onceledger/onceledger/adapters/console"
	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/domain/assertion"
)

var _ operations.ItemLookup = (*readmodel.Store)(nil)

// Balances records balance assertions, opening balances and adjustments
// (docs/reference.md, "Provider balances"), on the configured event store;
// the items adjustments resolve are looked up in the read model.
func (c *Core) Balances() *operations.Balances {
	return operations.NewBalances(c.events.Store, c.Periods(), readmodel.New(c.pool), c.cfg.Now)
}

// consoleBalances is the console's BalanceActions over the operations
// service: the domain's refusals marked with the console's sentinels.
type consoleBalances struct{ b *operations.Balances }

var (
	_ console.BalanceActions = consoleBalances{}
	_ console.BalanceReader  = (*readmodel.Store)(nil)
)

func (c consoleBalances) Adjust(ctx context.Context, cmd assertion.Adjustment) (assertion.Adjusted, error) {
	a, err := c.b.Adjust(ctx, cmd)
	return a, balanceErr(err)
}

func (c consoleBalances) Open(ctx context.Context, cmd assertion.Opening) (assertion.Opened, error) {
	o, err := c.b.Open(ctx, cmd)
	return o, balanceErr(err)
}

func balanceErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, assertion.ErrInvalid), errors.Is(err, operations.ErrItemUnknown), errors.Is(err, operations.ErrClosedPeriod):
		return fmt.Errorf("%w: %w", console.ErrInvalid, err)
	case errors.Is(err, assertion.ErrConflict):
		return fmt.Errorf("%w: %w", console.ErrConflict, err)
	}
	return err
}
