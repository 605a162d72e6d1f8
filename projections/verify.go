package projections

import (
	"context"
	"fmt"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/payment"
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
}

// Checks a Violation can come from.
const (
	CheckPostingsBalance  = "postings_balance"       // an event's postings do not sum to zero per currency
	CheckDecodable        = "event_decodable"        // an event of the feed cannot be decoded
	CheckBalancesMatch    = "balances_match_entries" // account_balances differs from SUM(ledger_entries)
	CheckEntriesBalance   = "entries_balance"        // an event's stored entries do not sum to zero
	CheckCheckpointInFeed = "checkpoint_within_head" // a projection claims a position past the head
)

// Violation is one broken ledger invariant.
type Violation struct {
	Check  string
	Detail string
}

func (v Violation) String() string { return v.Check + ": " + v.Detail }

// Violations found by Verify; empty means the ledger is sound.
type Violations []Violation

// maxViolations bounds each check's list, so that a systematic fault does
// not flood the report.
const maxViolations = 100

// Verify checks the ledger invariants: every event of the feed decodes and
// its postings balance per currency; every balance equals the sum of its
// entries, and every event's entries balance; every checkpoint is at or
// behind the head. It reads the whole feed.
func Verify(ctx context.Context, feed Feed, db AuditDB) (Violations, error) {
	var out Violations
	// Head first: a checkpoint may legitimately pass a head read earlier.
	cps, err := db.Checkpoints(ctx)
	if err != nil {
		return nil, err
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
			e, err := payment.Decode(r.Type, r.Data)
			if err != nil {
				if undecodable++; undecodable <= maxViolations {
					out = append(out, Violation{CheckDecodable, fmt.Sprintf("event %s (%s %s@%d): %v", r.ID, r.Type, r.StreamID, r.Version, err)})
				}
				continue
			}
			if err := ledger.Check(payment.Postings(e)); err != nil {
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

	vs, err := db.CheckLedger(ctx, maxViolations)
	if err != nil {
		return nil, err
	}
	return append(out, vs...), nil
}
