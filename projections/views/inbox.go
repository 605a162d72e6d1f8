package views

import (
	"slices"
	"strings"
	"time"
)

// InboxFilter selects deliveries of webhook_inbox, most recent first.
// Empty fields do not filter.
type InboxFilter struct {
	Provider string
	Status   string
	Type     string    // the event type, exact
	From, To time.Time // first seen in [From, To)
	// After is the keyset (nil: the most recent first); Limit caps the
	// page (<= 0: no cap).
	After *InboxKey
	Limit int
}

// InboxKey is a position in the inbox order (FirstSeenAt, Provider,
// DedupKey), descending. Its JSON is the console's cursor.
type InboxKey struct {
	FirstSeenAt time.Time `json:"t"`
	Provider    string    `json:"p"`
	DedupKey    string    `json:"k"`
}

// InboxRow is one delivery of webhook_inbox, without its body.
type InboxRow struct {
	Provider      string
	DedupKey      string
	EventType     string
	StreamID      string // "" when it names no stream
	Status        string
	DeliveryCount int
	ConflictCount int
	Attempts      int
	LastError     string
	FirstSeenAt   time.Time
	LastSeenAt    time.Time
	AppliedAt     time.Time // zero until applied
}

// Key returns the row's position in the inbox order.
func (r InboxRow) Key() InboxKey {
	return InboxKey{FirstSeenAt: r.FirstSeenAt, Provider: r.Provider, DedupKey: r.DedupKey}
}

// Delivery is one delivery with what is stored of it.
type Delivery struct {
	InboxRow
	PayloadHash string
	// Raw is the body as received; nil when it is no longer kept (erased
	// after the retention period).
	Raw []byte
	// Normalized is the normalized facts as stored (JSON); nil in the
	// lists of a stream's deliveries.
	Normalized []byte
	Conflicts  []Conflict
}

// Conflict is a redelivery of the same dedup key with other bytes
// (webhook_conflicts).
type Conflict struct {
	PayloadHash   string
	DeliveryCount int
	FirstSeenAt   time.Time
	Raw           []byte // nil when no longer kept
}

// InboxCount counts the deliveries of one provider in one status.
type InboxCount struct {
	Provider string
	Status   string
	Count    int64
}

// StatusCount counts deliveries in one status.
type StatusCount struct {
	Status string
	Count  int64
}

// ByStatus sums counts over providers, by status in byte order.
func ByStatus(counts []InboxCount) []StatusCount {
	var out []StatusCount
	index := map[string]int{}
	for _, c := range counts {
		i, ok := index[c.Status]
		if !ok {
			i = len(out)
			index[c.Status] = i
			out = append(out, StatusCount{Status: c.Status})
		}
		out[i].Count += c.Count
	}
	slices.SortFunc(out, func(a, b StatusCount) int { return strings.Compare(a.Status, b.Status) })
	return out
}
