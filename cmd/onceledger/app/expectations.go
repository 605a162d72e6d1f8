package app

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceledger/onceledger/adapters/expectations"
	"github.com/onceledger/onceledger/adapters/httpapi"
	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/adapters/postgres/expectstore"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
)

// DefaultQueryAfter is ONCELEDGER_QUERY_AFTER's default.
const DefaultQueryAfter = 15 * time.Minute

// DefaultQueryRate is ONCELEDGER_QUERY_RATE's default: questions a second
// to each provider.
const DefaultQueryRate = 5

// Expectations are the expected-payment commands (register, cancel, and
// the process manager's).
func (c *Core) Expectations() *operations.Expectations {
	return operations.NewExpectations(c.events.Store, c.cfg.Now)
}

// ExpectationManager is the expected-payment process manager over the
// configured event store (adapters/expectations), owner naming this
// instance's lease.
func (c *Core) ExpectationManager(owner string) *expectations.Manager {
	return expectations.New(c.events.Store, c.Expectations(), expectstore.New(c.pool), expectations.Config{
		Owner: owner, QueryAfter: c.queryAfter(), Now: c.cfg.Now, Logger: c.log})
}

func (c *Core) queryAfter() time.Duration {
	switch {
	case c.cfg.QueryAfter < 0: // "0" in the environment: never ask
		return 0
	case c.cfg.QueryAfter == 0:
		return DefaultQueryAfter
	}
	return c.cfg.QueryAfter
}

// expectedRoutes wires /v1/expected-payments, and the querier whose
// metric /metrics exports.
func (a *App) expectedRoutes(hc *httpapi.Config) {
	hc.Expected, hc.ExpectedQuery = a.Expectations(), a.reads.Query
	a.querier = a.Querier("querier-"+uuid.NewString(), hc.Registry)
}

// Querier asks the providers of cfg.Askers about due expectations and
// records what they answer through the webhook gate; reg (nil: none)
// takes its metric.
func (c *Core) Querier(owner string, reg prometheus.Registerer) *expectations.Querier {
	rate := c.cfg.QueryRate
	if rate <= 0 {
		rate = DefaultQueryRate
	}
	qc := expectations.QueryConfig{Owner: owner, Now: c.cfg.Now, Logger: c.log, Registerer: reg, PendingAfter: c.queryAfter(),
		Rate: rate, Concurrency: queryConcurrency(rate), Batch: queryBatch(rate)}
	if l := c.cfg.QueryLease; l > 0 {
		// A question never outlives its lease: another asker may take it.
		qc.Lease, qc.Timeout, qc.Poll = l, l/2, min(l, 5*time.Second)
	}
	return expectations.NewQuerier(c.cfg.Askers, c.service, expectstore.New(c.pool), qc)
}

// startExpectations runs the process manager until ctx ends (one instance
// at a time acts: its lease), and, with askers and ONCELEDGER_QUERY_AFTER,
// the querier (every instance: each claims its own due expectations).
func (a *App) startExpectations(ctx context.Context, wg *sync.WaitGroup) {
	owner := "expectations-" + uuid.NewString()
	m := a.ExpectationManager(owner)
	wg.Go(func() {
		_ = m.Run(ctx)
		release, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = expectstore.New(a.pool).Release(release, owner)
	})
	if len(a.cfg.Askers) > 0 && a.queryAfter() > 0 {
		names := make([]string, 0, len(a.cfg.Askers))
		for p := range a.cfg.Askers {
			names = append(names, p)
		}
		slices.Sort(names)
		a.log.Info("asking the providers about unpaid payments", "providers", names, "after", a.queryAfter())
		q := a.querier
		wg.Go(func() { q.Run(ctx) })
	}
}

// ReadModel is the read-model query store (the lists of /v1).
func (c *Core) ReadModel() *readmodel.Store { return c.query }

// queryConcurrency is how many questions to one provider may be in flight
// at rate questions a second: enough that each may take 250 ms (a
// provider's API answering from afar, the answer recorded through the
// gate, the schedule updated) without the sweep falling behind the rate;
// two at the default 5/s, at most 64.
func queryConcurrency(rate float64) int {
	return max(1, min(64, int(math.Ceil(rate/4))))
}

// queryBatch is how many due expectations one claim takes: a second's
// worth at rate (at least 100), so that the questions in flight seldom
// wait for the end of a claim.
func queryBatch(rate float64) int {
	return max(100, int(math.Ceil(rate)))
}
