package postgres_test

import (
	"testing"

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

	if inserted, _, err := inbox.Gate(ctx, ev, ingest.StatusReceived); err != nil || !inserted {
		t.Fatalf("first gate: %v, %v", inserted, err)
	}
	inserted, st, err := inbox.Gate(ctx, ev, ingest.StatusReceived)
	want := ingest.Stored{Status: ingest.StatusReceived, PayloadHash: ev.PayloadHash, FactsHash: ev.FactsHash(), StreamID: ev.StreamID()}
	if err != nil || inserted || st != want {
		t.Fatalf("second gate: %v, %+v, %v; want %+v", inserted, st, err, want)
	}
	other := recCapture("evt_1", "second")
	for range 2 {
		if inserted, st, err := inbox.Gate(ctx, other, ingest.StatusReceived); err != nil || inserted || st.PayloadHash != ev.PayloadHash {
			t.Fatalf("conflicting gate: %v, %+v, %v", inserted, st, err)
		}
		if err := inbox.KeepConflict(ctx, other); err != nil {
			t.Fatal(err)
		}
	}
	var deliveries, conflictCount, conflictRows, conflictDeliveries int
	if err := pool.QueryRow(ctx, `
		SELECT i.delivery_count, i.conflict_count, count(c.*), coalesce(sum(c.delivery_count), 0)
		FROM webhook_inbox i LEFT JOIN webhook_conflicts c USING (provider, dedup_key)
		WHERE i.dedup_key = 'evt_1' GROUP BY 1, 2`).Scan(&deliveries, &conflictCount, &conflictRows, &conflictDeliveries); err != nil {
		t.Fatal(err)
	}
	if deliveries != 4 || conflictCount != 2 || conflictRows != 1 || conflictDeliveries != 2 {
		t.Fatalf("deliveries %d, conflicts %d, conflict rows %d with %d deliveries", deliveries, conflictCount, conflictRows, conflictDeliveries)
	}

	if moved, err := inbox.SetStatus(ctx, k, ingest.StatusUnverified, ingest.StatusApplied); err != nil || moved {
		t.Fatalf("set from the wrong status: %v, %v", moved, err)
	}
	if moved, err := inbox.SetStatus(ctx, k, ingest.StatusReceived, ingest.StatusApplied); err != nil || !moved {
		t.Fatalf("set: %v, %v", moved, err)
	}
	loaded, status, err := inbox.Load(ctx, k)
	if err != nil || status != ingest.StatusApplied || loaded.PayloadHash != ev.PayloadHash || loaded.StreamID() != ev.StreamID() ||
		len(loaded.Facts) != 1 || loaded.Facts[0] != ev.Facts[0] {
		t.Fatalf("load: %+v, %s, %v", loaded, status, err)
	}
}
