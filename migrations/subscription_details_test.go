package migrations_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for goose
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/migrations"
)

// 00105 rewrites subscription_disabled items projected before issue 33
// (whole URL, receiver error) and their queued reconciliation.opened bodies
// to exactly what payment.PublicDetails (the projections, a rebuild) makes
// of the stored event; other items are left alone.
func TestSubscriptionDetailsRedactedByMigration(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("pgx", pgtest.NewEmptyDatabase(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithDisableGlobalRegistry(true),
		goose.WithLogger(goose.NopLogger()))
	require.NoError(t, err)
	_, err = p.UpTo(ctx, 104)
	require.NoError(t, err)

	old := func(u string) string {
		return "push subscription to " + u + " disabled after its retry schedule: event e attempt 9: Post \"" + u + "\": EOF; re-enable it once the endpoint answers"
	}
	rows := map[string]string{ // key → stored details
		uuid.NewString(): old("https://hooks.example.com/services/T0/B0/SECRET"),
		uuid.NewString(): old("https://u:SECRET@api.example.net:8443/in?api_key=SECRET"),
		uuid.NewString(): old("http://[2001:db8::7]:9000/SECRET"),
		uuid.NewString(): "SECRET unrecognized",
	}
	for key, details := range rows {
		_, err := db.ExecContext(ctx, `INSERT INTO reconciliation_items (stream_id, kind, item_key, status, provider, payment_id, details)
			VALUES ($1, 'subscription_disabled', $2, 'open', '', $2, $3)`, "subscription-"+key, key, details)
		require.NoError(t, err)
	}
	_, err = db.ExecContext(ctx, `INSERT INTO reconciliation_items (stream_id, kind, item_key, status, provider, payment_id, details)
		VALUES ('payment-x', 'over_refund', 'refunds', 'open', 'stripe', 'x', 'refunds exceed captures: https://x/SECRET')`)
	require.NoError(t, err)

	// A subscriber's queue holding the old event, not yet sent.
	subscriber, key := uuid.New(), uuid.NewString()
	_, err = db.ExecContext(ctx, `INSERT INTO subscriptions (id, url, secret) VALUES ($1, 'https://other.example/h', '\x00')`, subscriber)
	require.NoError(t, err)
	body, err := json.Marshal(map[string]any{"id": uuid.NewString(), "type": "reconciliation.opened",
		"data": map[string]any{"kind": "subscription_disabled", "key": key, "details": old("https://hooks.example.com/services/SECRET")}})
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO subscription_queue (subscription_id, lane, stream_key, event_id, event_type, commit_pos, prepare_pos, body)
		VALUES ($1, 0, 's', $2, 'reconciliation.opened', 1, 1, $3)`, subscriber, uuid.New(), body)
	require.NoError(t, err)

	_, err = p.UpTo(ctx, 105)
	require.NoError(t, err)
	for key, details := range rows {
		var got string
		require.NoError(t, db.QueryRowContext(ctx, `SELECT details FROM reconciliation_items WHERE item_key = $1`, key).Scan(&got))
		assert.Equal(t, payment.PublicDetails(payment.ReconSubscriptionDisabled, key, details), got)
		assert.NotContains(t, got, "SECRET")
	}
	var other string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT details FROM reconciliation_items WHERE kind = 'over_refund'`).Scan(&other))
	assert.Equal(t, "refunds exceed captures: https://x/SECRET", other, "other kinds untouched")
	var queued []byte
	require.NoError(t, db.QueryRowContext(ctx, `SELECT body FROM subscription_queue WHERE subscription_id = $1`, subscriber).Scan(&queued))
	var doc struct {
		Data map[string]string `json:"data"`
	}
	require.NoError(t, json.Unmarshal(queued, &doc))
	assert.Equal(t, payment.SubscriptionDisabledDetails(key, "hooks.example.com"), doc.Data["details"])
}
