package projections

import (
	"context"
	"slices"
)

// GroupSum is one checksum group of a table (for ledger entries: one
// account, currency and UTC day): its row count and the XOR of a 64-bit
// hash of each row's key and compared columns. Rows are unique by key, so
// equal sums mean equal rows up to a 2^-64 chance per group; the XOR lets
// a group be added up in any order, in parts.
type GroupSum struct{ Rows, Hash int64 }

// TableSums are one table's checksum groups, by group name.
type TableSums map[string]GroupSum

// Merge adds o's rows into s.
func (s TableSums) Merge(o TableSums) {
	for g, x := range o {
		y := s[g]
		s[g] = GroupSum{Rows: y.Rows + x.Rows, Hash: y.Hash ^ x.Hash}
	}
}

// CompareSums compares a table's live and rebuilt checksum groups.
func CompareSums(table string, live, rebuilt TableSums) TableComparison {
	c := TableComparison{Table: table}
	for g, l := range live {
		c.LiveRows += l.Rows
		if r, ok := rebuilt[g]; !ok || r != l {
			c.DifferingGroups = append(c.DifferingGroups, g)
		}
	}
	for g, r := range rebuilt {
		c.RebuiltRows += r.Rows
		if _, ok := live[g]; !ok {
			c.DifferingGroups = append(c.DifferingGroups, g)
		}
	}
	slices.Sort(c.DifferingGroups)
	return c
}

// EntrySums is the checksum of the ledger entries a rebuild books,
// computed as it books them: the same groups and hashes as the database's
// checksum of a ledger_entries table holding exactly those entries. A
// rebuild of a healthy ledger compares them with the live table's and
// never stores the entries.
type EntrySums interface {
	// Add hashes entries into their groups.
	Add(entries []LedgerEntry) error
	// Sums returns the groups so far.
	Sums() TableSums
}

// ChecksumDB is what the checksum pass of a rebuild needs besides the
// rest of ShadowDB.
type ChecksumDB interface {
	// NewEntrySums returns an empty EntrySums.
	NewEntrySums() EntrySums
	// LiveChecksums scans the live tables, as snap saw them, into their
	// checksum groups.
	LiveChecksums(ctx context.Context, snap LiveSnapshot, tables []string) (map[string]TableSums, error)
	// ShadowChecksums scans the shadow tables into their checksum groups.
	ShadowChecksums(ctx context.Context, tables []string) (map[string]TableSums, error)
	// DetailGroups is ShadowDB.Compare without its checksums: given the
	// comparisons by checksums of live and shadow tables as they stand
	// (CompareSums), it compares the rows of the differing groups and
	// reports every difference (at most maxRows detailed per table).
	DetailGroups(ctx context.Context, comps []TableComparison, maxRows int) ([]TableComparison, []Difference, error)
}
