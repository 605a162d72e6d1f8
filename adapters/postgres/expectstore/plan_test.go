package expectstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres/expectstore"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
)

// The schedule costs one indexed read per due expectation (issue 36): on
// a table of 50,000 outstanding expectations asked about tomorrow and 20
// due now, the claim's plan reads expected_payments by its next_query_at
// index (never a sequential scan of the table), and the claim takes the
// 20 due ones only.
func TestClaimPlanUsesTheIndex(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := pgtest.NewPool(t)
	now := time.Now().UTC().Truncate(time.Second)
	_, err := pool.Exec(ctx, `
		INSERT INTO expected_payments (id, provider, reference, amount, currency, expires_at, registered_at, status,
			version, updated_at, next_query_at)
		SELECT gen_random_uuid(), 'stripe', 'pi_plan_' || g, 1000, 'USD', $1::timestamptz + interval '2 days', $1, 'expected',
			1, $1, $1::timestamptz + CASE WHEN g <= 20 THEN interval '-1 minute' ELSE interval '1 day' END
		FROM generate_series(1, 50000) g`, now)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE expected_payments; ANALYZE pending_payments`)
	require.NoError(t, err)

	plan, err := expectstore.New(pool).ClaimPlan(ctx, []string{"stripe", "alipay", "wechatpay"}, now, 100)
	require.NoError(t, err)
	t.Log(plan)
	assert.Contains(t, plan, "expected_payments_query_idx", "the due read goes through next_query_at's index:\n%s", plan)
	assert.NotContains(t, plan, "Seq Scan on expected_payments", "no sequential scan of the outstanding expectations:\n%s", plan)

	due, err := expectstore.New(pool).Claim(ctx, "plan-test", []string{"stripe"}, now, time.Minute, 100)
	require.NoError(t, err)
	assert.Len(t, due, 20, "only the due ones")
}
