package readmodel_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/projections"
)

// TestProjectorInsertsRunOnGenericPlans: on a connection that plans every
// execution (serve's plan_cache_mode=force_custom_plan), the ledger
// projector's entry insert runs on a generic plan, and the statements
// after it in the same batch are planned as before (custom): the setting
// is put back.
func TestProjectorInsertsRunOnGenericPlans(t *testing.T) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDatabase(t))
	require.NoError(t, err)
	cfg.MaxConns = 1 // every statement and the catalog query on one connection
	cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	db := readmodel.New(pool)
	require.NoError(t, db.EnsureCheckpoints(ctx, []string{projections.NameLedger}))

	entries := awkwardEntries(t) // again and again: a replayed batch, inserting nothing
	pos := eventstore.Start
	for i := range 3 {
		b, err := db.BeginLive(ctx, projections.NameLedger, pos, false)
		require.NoError(t, err)
		err = b.InsertLedgerEntries(ctx, entries)
		if err == nil {
			_, err = b.Payments(ctx, []string{"payment-standard-x"})
		}
		if err != nil {
			_ = b.Rollback(ctx)
			require.NoError(t, err)
		}
		pos = eventstore.Position{Commit: uint64(i + 1), Prepare: uint64(i + 1)}
		require.NoError(t, b.Commit(ctx, pos))
	}
	plans := func(like string) (generic, custom int64) {
		t.Helper()
		require.NoError(t, pool.QueryRow(ctx, `
			SELECT coalesce(sum(generic_plans), 0), coalesce(sum(custom_plans), 0)
			FROM pg_prepared_statements WHERE statement LIKE $1`, like).Scan(&generic, &custom))
		return generic, custom
	}
	g, c := plans(`%INSERT INTO "ledger_entries"%`)
	assert.EqualValues(t, 3, g, "entry inserts on the generic plan")
	assert.Zero(t, c, "entry inserts planned per execution")
	g, c = plans(`%FROM "payments" WHERE stream_id = ANY%`)
	assert.Zero(t, g, "the payments read after it on a generic plan: the setting was not put back")
	assert.EqualValues(t, 3, c)
}
