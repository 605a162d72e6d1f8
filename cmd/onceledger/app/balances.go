package app

import (
	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
)

var _ operations.ItemLookup = (*readmodel.Store)(nil)

// Balances records balance assertions, opening balances and adjustments
// (docs/reference.md, "Provider balances"), on the configured event store;
// the items adjustments resolve are looked up in the read model.
func (c *Core) Balances() *operations.Balances {
	return operations.NewBalances(c.events.Store, c.Periods(), readmodel.New(c.pool), c.cfg.Now)
}
