package projections

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/period"
)

// AuditDB is what verify and status read from the read-model database.
type AuditDB interface {
	Checkpoints(ctx context.Context) ([]Checkpoint, error)
	// CheckLedger reports balances that differ from the sum of their
	// entries and events whose entries do not sum to zero per currency, at
	// most limit of each, from one consistent snapshot.
	CheckLedger(ctx context.Context, limit int) ([]Violation, error)
	// InboxCounts counts webhook_inbox rows by status.
	InboxCounts(ctx context.Context) (map[string]int64, error)
	LockHeld(ctx context.Context, kind LockKind, name string) (bool, error)
	// FrozenPeriods returns the closed periods with their stored hash and
	// frozen lines, and the ledger projection's checkpoint, from one
	// snapshot (the periods are as of that position).
	FrozenPeriods(ctx context.Context) (eventstore.Position, []FrozenPeriod, error)
}

// FrozenPeriod is a closed period as stored: periods.content_hash and its
// period_balances rows.
type FrozenPeriod struct {
	Period period.Period
	Hash   string
	Lines  []period.Balance
}

// Checks a Violation can come from.
const (
	CheckPostingsBalance  = "postings_balance"       // an event's postings do not sum to zero per currency
	CheckDecodable        = "event_decodable"        // an event of the feed cannot be decoded
	CheckBalancesMatch    = "balances_match_entries" // account_balances differs from SUM(ledger_entries)
	CheckEntriesBalance   = "entries_balance"        // an event's stored entries do not sum to zero
	CheckCheckpointInFeed = "checkpoint_within_head" // a projection claims a position past the head
	CheckPeriodHash       = "period_hash"            // a closed period's figures differ from history or from its hash
)

// Violation is one broken ledger invariant.
type Violation struct {
	Check  string
	Detail string
}

func (v Violation) String() string { return v.Check + ": " + v.Detail }

// Violations found by Verify; empty means the ledger is sound.
type Violations []Violation

// horizonFloor is a feed whose horizon can be raised to a position a reader
// of it returned (postgres.EventStore.AtLeast).
type horizonFloor interface{ AtLeast(eventstore.Position) }

// maxViolations bounds each check's list, so that a systematic fault does
// not flood the report.
const maxViolations = 100

// Verify checks the ledger invariants: every event of the feed decodes and
// its postings balance per currency; every balance equals the sum of its
// entries, and every event's entries balance; every checkpoint is at or
// behind the head; every closed period's frozen figures match their hash
// and a recomputation from history (the feed up to the ledger's checkpoint,
// booked by domain/period's rule in the reporting zone of opts). It reads
// the whole feed.
func Verify(ctx context.Context, feed Feed, db AuditDB, opts ...Option) (Violations, error) {
	var out Violations
	// The frozen periods first, with the position they are as of: the
	// recomputation replays the feed up to there.
	ledgerAt, frozen, err := db.FrozenPeriods(ctx)
	if err != nil {
		return nil, err
	}
	books := period.NewBooks(configure(opts).zone)
	var booksErr error
	// Checkpoints first, then the head: a checkpoint may legitimately pass a
	// head read before it. A feed whose horizon is raised to what readers
	// already returned (the Postgres store: its horizon is monotonic, but a
	// fresh process has observed nothing yet) is told the checkpoints, each
	// a position a projector read: its head is then never below them unless
	// no such event exists, which is the violation.
	cps, err := db.Checkpoints(ctx)
	if err != nil {
		return nil, err
	}
	if f, ok := feed.(horizonFloor); ok {
		for _, cp := range cps {
			f.AtLeast(cp.Position)
		}
	}
	head, err := feed.Head(ctx)
	if err != nil {
		return nil, err
	}
	for _, cp := range cps {
		if head.Less(cp.Position) {
			out = append(out, Violation{CheckCheckpointInFeed,
				fmt.Sprintf("projection %s is at %s, past the head %s", cp.Name, cp.Position, head)})
		}
	}

	unbalanced, undecodable := 0, 0
	for at := eventstore.Start; ; {
		evs, err := feed.ReadAll(ctx, at, 5000)
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 {
			break
		}
		for _, r := range evs {
			env, err := decodeOne(r)
			if err != nil {
				if undecodable++; undecodable <= maxViolations {
					out = append(out, Violation{CheckDecodable, fmt.Sprintf("event %s (%s %s@%d): %v", r.ID, r.Type, r.StreamID, r.Version, err)})
				}
				continue
			}
			if booksErr == nil && !ledgerAt.Less(r.Position) {
				booksErr = book(books, env)
			}
			ps, _, _ := postingsOf(env) // assertions.go: opening balances and adjustments post too
			if len(ps) == 0 {
				continue
			}
			if err := ledger.Check(ps); err != nil {
				if unbalanced++; unbalanced <= maxViolations {
					out = append(out, Violation{CheckPostingsBalance, fmt.Sprintf("event %s (%s %s@%d): %v", r.ID, r.Type, r.StreamID, r.Version, err)})
				}
			}
		}
		at = evs[len(evs)-1].Position
	}
	if undecodable > maxViolations {
		out = append(out, Violation{CheckDecodable, fmt.Sprintf("%d undecodable events in all", undecodable)})
	}
	if unbalanced > maxViolations {
		out = append(out, Violation{CheckPostingsBalance, fmt.Sprintf("%d unbalanced events in all", unbalanced)})
	}

	out = append(out, checkPeriods(books, booksErr, frozen)...)

	vs, err := db.CheckLedger(ctx, maxViolations)
	if err != nil {
		return nil, err
	}
	return append(out, vs...), nil
}

// book replays one event into the books as the ledger projection does.
func book(b *period.Books, env Envelope) error {
	if env.Period != nil {
		if err := b.Apply(env.Period); err != nil {
			return fmt.Errorf("event %s (%s): %w", env.Recorded.ID, env.Recorded.Type, err)
		}
		return nil
	}
	ps, _, at := postingsOf(env) // assertions.go: opening balances and adjustments post too
	if len(ps) == 0 {
		return nil
	}
	if at.IsZero() {
		at = env.Recorded.RecordedAt
	}
	_, err := b.Post(at, ps)
	return err
}

// checkPeriods compares the stored closed periods with the books
// recomputed from history, and each with its own hash.
func checkPeriods(books *period.Books, booksErr error, stored []FrozenPeriod) Violations {
	var out Violations
	if booksErr != nil {
		return append(out, Violation{CheckPeriodHash, "cannot recompute the periods from history: " + booksErr.Error()})
	}
	want := books.Frozen()
	seen := map[period.Period]bool{}
	for _, f := range stored {
		seen[f.Period] = true
		if h := period.Hash(f.Period, f.Lines); h != f.Hash {
			out = append(out, Violation{CheckPeriodHash, fmt.Sprintf("period %s: period_balances hash to %s, periods.content_hash is %s", f.Period, h, f.Hash)})
		}
		w, ok := want[f.Period]
		switch {
		case !ok:
			out = append(out, Violation{CheckPeriodHash, fmt.Sprintf("period %s is closed, but history does not close it", f.Period)})
		case w.Hash != f.Hash:
			out = append(out, Violation{CheckPeriodHash, fmt.Sprintf("period %s: stored hash %s, recomputed from history %s", f.Period, f.Hash, w.Hash)})
		}
	}
	for p := range want {
		if !seen[p] {
			out = append(out, Violation{CheckPeriodHash, fmt.Sprintf("period %s is closed in history, but not in the periods table", p)})
		}
	}
	slices.SortFunc(out, func(a, b Violation) int { return strings.Compare(a.Detail, b.Detail) })
	return out
}
