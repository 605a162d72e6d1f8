// Package outbox is onceledger's push subscriptions (docs/events.md, "Push
// subscriptions"): the operators' service that creates, changes, enables,
// rotates, replays and removes subscriptions (Service), and the sender
// (Sender), a projector over the committed outbound feed that queues each
// subscription's matching events per stream and POSTs them signed per
// Standard Webhooks, with a stored retry schedule. Its storage is the
// consumer-declared ports Store and SenderStore (adapters/postgres
// implements both); its rules (matching, the schedule, batching, signing,
// the address check) are here.
package outbox

import (
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/projections/outbound"
)

// The states of a subscription.
const (
	StateActive   = "active"   // delivering
	StateFailing  = "failing"  // some event is being retried
	StateDisabled = "disabled" // the retry schedule ran out: nothing is sent until enabled
)

// Lanes of the queue: live deliveries, and replays (sent beside them,
// throttled, never ahead of them).
const (
	LaneLive   = 0
	LaneReplay = 1
)

// ErrNotFound: no subscription has that id.
var ErrNotFound = errors.New("no such subscription")

// ErrActorRequired: an operator's action must name who took it.
var ErrActorRequired = errors.New("an actor is required")

// Subscription is one push subscription as the operators see it.
type Subscription struct {
	ID          uuid.UUID
	URL         string
	Types       []string // none: every type but settlement.line
	Providers   []string // none: every provider
	Description string
	State       string
	// Position is the subscription's checkpoint in the feed: every
	// matching event up to it is queued (or delivered).
	Position    eventstore.Position
	LastError   string
	LastErrorAt time.Time // zero when none
	DisabledAt  time.Time // zero unless disabled
	// OldSecretExpires: during a rotation, until when the old secret signs
	// too (zero: no rotation).
	OldSecretExpires time.Time
	// Replay, when not nil, is a replay under way.
	Replay    *Replay
	Pending   int64 // queued events not yet acknowledged
	CreatedBy string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Replay is a replay under way: the feed after From (and from FromTime,
// when set) up to Until, queued again on the replay lane.
type Replay struct {
	From     eventstore.Position
	Until    eventstore.Position
	FromTime time.Time
}

// Filter is what a subscription receives.
type Filter struct {
	Types     []string
	Providers []string
}

// Matches reports whether e goes to a subscription with this filter:
// its type is listed (no list: every type, except settlement.line, which
// only a list that names it receives), and its provider is listed (no
// list: every provider; an event of no provider, a period's, passes).
func (f Filter) Matches(e outbound.Event) bool {
	if len(f.Types) == 0 {
		if e.Type == outbound.SettlementLine {
			return false
		}
	} else if !slices.Contains(f.Types, e.Type) {
		return false
	}
	return len(f.Providers) == 0 || e.Provider == "" || slices.Contains(f.Providers, e.Provider)
}

// Attempt is one delivery attempt (GET /v1/subscriptions/{id}/deliveries).
type Attempt struct {
	ID        int64
	EventID   uuid.UUID
	EventType string
	Attempt   int
	Replay    bool
	At        time.Time
	Status    int // HTTP status; 0 when no answer came
	Latency   time.Duration
	Error     string
	Succeeded bool
}

// Action is an operator's action on a subscription, recorded with it in
// the same transaction (subscription_actions).
type Action struct {
	Name    string // created, updated, deleted, enabled, secret_rotated, replay
	Actor   string
	Note    string
	Details map[string]any
	At      time.Time
}
