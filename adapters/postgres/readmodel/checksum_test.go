package readmodel_test

import (
	"context"
	"github.com/jackc/pgx/v5"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/period"
	"github.com/onceledger/onceledger/projections"
)

// awkwardEntries are ledger entries with the values a checksum computed in
// Go could get wrong: text of every length around the hash's 4- and
// 12-byte steps and past the stack buffer, multi-byte UTF-8, empty
// strings, negative, zero and extreme amounts and positions, times with
// nanoseconds (the database keeps microseconds), before 2000 and before
// 1970 (negative microseconds), in other zones, on both sides of midnight
// UTC (the group's day), and late entries (adjusts_period set) beside
// others (NULL).
func awkwardEntries(t *testing.T) []projections.LedgerEntry {
	t.Helper()
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	mustPeriod := func(s string) period.Period {
		p, err := period.Parse(s)
		require.NoError(t, err)
		return p
	}
	times := []time.Time{
		time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 1, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(2026, 3, 2, 0, 0, 0, 1, time.UTC),
		time.Date(2026, 2, 28, 21, 30, 0, 123_456_789, ny), // March 1st in UTC
		time.Date(2026, 3, 1, 0, 30, 0, 0, time.FixedZone("+05:30", 5*3600+1800)),
		time.Date(1999, 12, 31, 23, 59, 59, 999_999_000, time.UTC),
		time.Date(1969, 7, 20, 20, 17, 40, 500, time.UTC),
		time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	texts := []string{"", "a", "ab", "abc", "abcd", "abcde", "abcdefg", "abcdefgh", "abcdefghi", "abcdefghijk",
		"abcdefghijkl", "abcdefghijklm", "abcdefghijklmnopqrstuvwx", "revenue:sales", "assets:stripe:pending",
		"zahlungsverkehr:ü", "日本語の勘定", "emoji 💶 account", strings.Repeat("long-account:", 12)}
	amounts := []int64{0, 1, -1, 100, -100, 1 << 31, -(1 << 31), 1<<32 + 7, -(1<<32 + 7), math.MaxInt64, math.MinInt64 + 1}
	currencies := []money.Currency{"USD", "EUR", "JPY"}
	var out []projections.LedgerEntry
	for i := range 60 {
		occurred := times[i%len(times)]
		e := projections.LedgerEntry{
			EventID:      uuid.New(),
			PostingIndex: i % 5,
			StreamID:     "payment-test-" + texts[(i+3)%len(texts)],
			EventType:    texts[(i+7)%len(texts)],
			Provider:     texts[(i+11)%len(texts)],
			Account:      texts[i%len(texts)],
			Currency:     currencies[i%len(currencies)],
			Amount:       amounts[i%len(amounts)],
			OccurredAt:   occurred,
			RecordedAt:   times[(i+4)%len(times)],
			Position:     eventstore.Position{Commit: uint64(i) * 1_000_003, Prepare: uint64(i)},
			Period:       mustPeriod("2026-03"),
		}
		switch i % 4 {
		case 1:
			e.Late, e.Adjusts = true, mustPeriod("2026-02")
		case 2:
			e.Position = eventstore.Position{Commit: math.MaxInt64 - uint64(i), Prepare: math.MaxInt64 - 1}
			e.PostingIndex = math.MaxInt32 - i
		}
		out = append(out, e)
	}
	return out
}

// TestEntryChecksumsInGoEqualTheDatabases: the contract between the two
// checksums of ledger entries. The same entries, stored by the live
// writer (INSERT) and by the bulk writer (COPY into the shadow), and
// hashed in Go by NewEntrySums, give the same groups, counts and hashes.
// A rebuild of a healthy ledger trusts this to not store its entries.
func TestEntryChecksumsInGoEqualTheDatabases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	db := readmodel.New(pool)
	entries := awkwardEntries(t)

	require.NoError(t, db.EnsureCheckpoints(ctx, []string{projections.NameLedger}))
	b, err := db.BeginLive(ctx, projections.NameLedger, eventstore.Start, false)
	require.NoError(t, err)
	require.NoError(t, b.InsertLedgerEntries(ctx, entries))
	require.NoError(t, b.Commit(ctx, eventstore.Position{Commit: 1, Prepare: 1}))

	tables := []string{"ledger_entries"}
	require.NoError(t, db.PrepareShadow(ctx, tables))
	sb, err := db.BeginShadow(ctx)
	require.NoError(t, err)
	require.NoError(t, sb.InsertLedgerEntries(ctx, entries))
	require.NoError(t, sb.Commit(ctx, eventstore.Position{}))

	// In Go, in two parts (as the rebuild's hashers add them up), merged.
	inGo := projections.TableSums{}
	for _, part := range [][]projections.LedgerEntry{entries[:25], entries[25:]} {
		s := db.NewEntrySums()
		require.NoError(t, s.Add(part))
		inGo.Merge(s.Sums())
	}

	snap, err := db.SnapshotLive(ctx)
	require.NoError(t, err)
	live, err := db.LiveChecksums(ctx, snap, tables)
	require.NoError(t, snap.Close(ctx))
	require.NoError(t, err)
	shadow, err := db.ShadowChecksums(ctx, tables)
	require.NoError(t, err)

	require.NotEmpty(t, inGo)
	assert.Equal(t, live["ledger_entries"], inGo, "live table (INSERT) against Go")
	assert.Equal(t, shadow["ledger_entries"], inGo, "shadow table (COPY) against Go")

	// The groups are named alike whatever the sessions' DateStyle: a
	// server configured for another one must not make every group differ.
	var dbName string
	require.NoError(t, pool.QueryRow(ctx, `SELECT current_database()`).Scan(&dbName))
	_, err = pool.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{dbName}.Sanitize()+` SET DateStyle = 'SQL, DMY'`)
	require.NoError(t, err)
	pool.Reset() // new connections take the database's DateStyle
	var style string
	require.NoError(t, pool.QueryRow(ctx, `SHOW DateStyle`).Scan(&style))
	require.Equal(t, "SQL, DMY", style)
	snap, err = db.SnapshotLive(ctx)
	require.NoError(t, err)
	liveSQL, err := db.LiveChecksums(ctx, snap, tables)
	require.NoError(t, snap.Close(ctx))
	require.NoError(t, err)
	assert.Equal(t, inGo, liveSQL["ledger_entries"], "live table under DateStyle SQL, DMY against Go")
	c := projections.CompareSums("ledger_entries", live["ledger_entries"], inGo)
	assert.Empty(t, c.DifferingGroups)
	assert.EqualValues(t, len(entries), c.LiveRows)

	// And a checksum is not blind: one changed column in one entry
	// changes its group's hash, and only that group's.
	changed := append([]projections.LedgerEntry(nil), entries...)
	changed[7].Amount++
	s := db.NewEntrySums()
	require.NoError(t, s.Add(changed))
	c = projections.CompareSums("ledger_entries", live["ledger_entries"], s.Sums())
	assert.Len(t, c.DifferingGroups, 1)
}
