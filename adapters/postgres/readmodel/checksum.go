package readmodel

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/onceledger/onceledger/projections"
)

// entrySums computes, in Go, what checksum() reads from a ledger_entries
// table: per group (account, currency, UTC day of occurred_at, joined by
// '/' as groupKey formats them) the row count and the XOR of
// hash_record_extended(ROW(ledgerEntryColumns...), 0) of each row, with
// the values the writer would store (writer.go: InsertLedgerEntries,
// copyLedgerEntries).
type entrySums struct {
	groups map[entryGroup]projections.GroupSum
}

type entryGroup struct {
	account, currency string
	day               int64 // days since the Unix epoch, UTC
}

// NewEntrySums returns an empty checksum of ledger entries.
func (s *Store) NewEntrySums() projections.EntrySums {
	return &entrySums{groups: map[entryGroup]projections.GroupSum{}}
}

var _ projections.ChecksumDB = (*Store)(nil)

func (s *entrySums) Add(entries []projections.LedgerEntry) error {
	for i := range entries {
		e := &entries[i]
		h, err := ledgerEntryHash(e)
		if err != nil {
			return err
		}
		micros := pgTimestamptz(e.OccurredAt) + pgEpoch*1_000_000
		day := micros / 86_400_000_000
		if micros < 0 && micros%86_400_000_000 != 0 {
			day-- // floor
		}
		k := entryGroup{account: e.Account, currency: string(e.Currency), day: day}
		g := s.groups[k]
		s.groups[k] = projections.GroupSum{Rows: g.Rows + 1, Hash: g.Hash ^ h}
	}
	return nil
}

func (s *entrySums) Sums() projections.TableSums {
	out := make(projections.TableSums, len(s.groups))
	for k, g := range s.groups {
		day := time.Unix(k.day*86400, 0).UTC().Format(time.DateOnly)
		out[k.account+"/"+k.currency+"/"+day] = g
	}
	return out
}

// ledgerEntryHash is the row hash of e (rowHash of the ledger_entries
// spec: its key and compared columns, in ledgerEntryColumns' order).
func ledgerEntryHash(e *projections.LedgerEntry) (int64, error) {
	c, p, err := position64(e.Position)
	if err != nil {
		return 0, err
	}
	var r pgRecord
	r = r.add(pgHashBytes(e.EventID[:]))
	r = r.add(pgHashUint32(uint32(int32(e.PostingIndex))))
	r = r.add(pgHashString(e.StreamID))
	r = r.add(pgHashString(e.EventType))
	r = r.add(pgHashString(e.Provider))
	r = r.add(pgHashString(e.Account))
	r = r.add(pgHashString(string(e.Currency)))
	r = r.add(pgHashInt8(e.Amount))
	r = r.add(pgHashInt8(pgTimestamptz(e.OccurredAt)))
	r = r.add(pgHashInt8(pgTimestamptz(e.RecordedAt)))
	r = r.add(pgHashInt8(c))
	r = r.add(pgHashInt8(p))
	r = r.add(pgHashString(e.Period.String()))
	r = r.add(pgHashBool(e.Late))
	if a := adjustsColumn(*e); a != nil {
		r = r.add(pgHashString(*a))
	} else {
		r = r.add(0)
	}
	return int64(r), nil
}

// LiveChecksums scans the live tables in the exported snapshot snap into
// their checksum groups, side by side.
func (s *Store) LiveChecksums(ctx context.Context, snap projections.LiveSnapshot, tables []string) (map[string]projections.TableSums, error) {
	if err := checkTables(tables); err != nil {
		return nil, err
	}
	ls, ok := snap.(*liveSnapshot)
	if !ok || ls == nil {
		return nil, errors.New("readmodel: LiveChecksums needs a snapshot from SnapshotLive")
	}
	return s.tableChecksums(ctx, tables, "", ls.id)
}

// ShadowChecksums scans the shadow tables into their checksum groups,
// side by side.
func (s *Store) ShadowChecksums(ctx context.Context, tables []string) (map[string]projections.TableSums, error) {
	if err := checkTables(tables); err != nil {
		return nil, err
	}
	return s.tableChecksums(ctx, tables, shadowSuffix, "")
}

func (s *Store) tableChecksums(ctx context.Context, tables []string, suffix, snap string) (map[string]projections.TableSums, error) {
	out := make([]projections.TableSums, len(tables))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(compareScans)
	for i, t := range tables {
		g.Go(func() error {
			sums, err := s.checksum(gctx, t, t+suffix, snap)
			out[i] = sums
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	m := make(map[string]projections.TableSums, len(tables))
	for i, t := range tables {
		m[t] = out[i]
	}
	return m, nil
}
