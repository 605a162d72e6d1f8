package postgres_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
)

// TestInboxGate: the first Gate inserts; later ones count the delivery and
// report the stored row; a different payload is kept once per hash
// (KeepConflict); and
// SetStatus only moves a row from the status it is in.
func TestInboxGate(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx := testCtx(t)
	inbox := postgres.NewInbox(pool)
	ev := recCapture("evt_1", "first")
	k := ingest.InboxKey{Provider: ev.Provider, DedupKey: ev.DedupKey}

	inserted, _, err := inbox.Gate(ctx, ev, ingest.StatusReceived)
	require.NoError(t, err, "first gate: %v, %v", inserted, err)
	require.True(t, inserted, "first gate: %v, %v", inserted, err)
	inserted, st, err := inbox.Gate(ctx, ev, ingest.StatusReceived)
	want := ingest.Stored{Status: ingest.StatusReceived, PayloadHash: ev.PayloadHash, FactsHash: ev.FactsHash(), StreamID: ev.StreamID()}
	require.NoError(t, err, "second gate: %v, %+v, %v; want %+v", inserted, st, err, want)
	require.False(t, inserted, "second gate: %v, %+v, %v; want %+v", inserted, st, err, want)
	require.EqualValues(t, want, st, "second gate: %v, %+v, %v; want %+v", inserted, st, err, want)
	other := recCapture("evt_1", "second")
	for range 2 {
		inserted, st, err := inbox.Gate(ctx, other, ingest.StatusReceived)
		require.NoError(t, err, "conflicting gate: %v, %+v, %v", inserted, st, err)
		require.False(t, inserted, "conflicting gate: %v, %+v, %v", inserted, st, err)
		require.EqualValues(t, ev.PayloadHash, st.PayloadHash, "conflicting gate: %v, %+v, %v", inserted, st, err)
		require.NoError(t, inbox.KeepConflict(ctx, other))
	}
	var deliveries, conflictCount, conflictRows, conflictDeliveries int
	err = pool.QueryRow(ctx, `
		SELECT i.delivery_count, i.conflict_count, count(c.*), coalesce(sum(c.delivery_count), 0)
		FROM webhook_inbox i LEFT JOIN webhook_conflicts c USING (provider, dedup_key)
		WHERE i.dedup_key = 'evt_1' GROUP BY 1, 2`).Scan(&deliveries, &conflictCount, &conflictRows, &conflictDeliveries)
	require.NoError(t, err)
	require.EqualValues(t, 4, deliveries, "deliveries %d, conflicts %d, conflict rows %d with %d deliveries", deliveries, conflictCount, conflictRows, conflictDeliveries)
	require.EqualValues(t, 2, conflictCount, "deliveries %d, conflicts %d, conflict rows %d with %d deliveries", deliveries, conflictCount, conflictRows, conflictDeliveries)
	require.EqualValues(t, 1, conflictRows, "deliveries %d, conflicts %d, conflict rows %d with %d deliveries", deliveries, conflictCount, conflictRows, conflictDeliveries)
	require.EqualValues(t, 2, conflictDeliveries, "deliveries %d, conflicts %d, conflict rows %d with %d deliveries", deliveries, conflictCount, conflictRows, conflictDeliveries)

	moved, err := inbox.SetStatus(ctx, k, ingest.StatusUnverified, ingest.StatusApplied)
	require.NoError(t, err, "set from the wrong status: %v, %v", moved, err)
	require.False(t, moved, "set from the wrong status: %v, %v", moved, err)
	moved, err = inbox.SetStatus(ctx, k, ingest.StatusReceived, ingest.StatusApplied)
	require.NoError(t, err, "set: %v, %v", moved, err)
	require.True(t, moved, "set: %v, %v", moved, err)
	loaded, status, err := inbox.Load(ctx, k)
	require.NoError(t, err, "load: %+v, %s, %v", loaded, status, err)
	require.EqualValues(t, ingest.StatusApplied, status, "load: %+v, %s, %v", loaded, status, err)
	require.EqualValues(t, ev.PayloadHash, loaded.PayloadHash, "load: %+v, %s, %v", loaded, status, err)
	require.EqualValues(t, ev.StreamID(), loaded.StreamID(), "load: %+v, %s, %v", loaded, status, err)
	require.Len(t, loaded.Facts, 1, "load: %+v, %s, %v", loaded, status, err)
	require.EqualValues(t, ev.Facts[0], loaded.Facts[0], "load: %+v, %s, %v", loaded, status, err)
}
