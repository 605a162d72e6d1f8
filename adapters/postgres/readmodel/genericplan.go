package readmodel

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// execGeneric runs one of the projector's hot writes on a plan made once
// per connection instead of at every execution.
//
// serve's connections plan every execution (plan_cache_mode=
// force_custom_plan, cmd/onceledger/app customPlans: generic plans made
// while the tables were empty read them sequentially once they had grown).
// That reason does not hold for the statements sent here, which read no
// table by a plan: each is an INSERT of the rows of unnest($n::…[]) (a
// function scan of its arguments), whose ON CONFLICT arbiter is the unique
// index it names and whose DO UPDATE reaches the conflicting row through
// that index. The plan is the same on an empty table and on a billion
// rows, so planning it each time only costs (tens of microseconds per
// statement and batch; see adapters/postgres/groupcommit.go's
// genericPlansSQL, which does the same for ingest). Statements that read
// by a predicate (Payments' stream_id = ANY($1), the period sums) keep
// their custom plans.
//
// SET LOCAL, in one round trip with the statement: the setting applies to
// the statement's execution, and TO DEFAULT puts back the connection's own
// value (its startup parameter) for the rest of the transaction.
func (w *writer) execGeneric(ctx context.Context, sql string, args ...any) error {
	b := &pgx.Batch{}
	b.Queue(`SET LOCAL plan_cache_mode = force_generic_plan`)
	b.Queue(sql, args...)
	b.Queue(`SET LOCAL plan_cache_mode TO DEFAULT`)
	return classify(w.tx.SendBatch(ctx, b).Close())
}
