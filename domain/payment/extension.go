package payment

import (
	"strings"
	"sync"

	"github.com/onceledger/onceledger/domain/ledger"
)

// Other aggregates of the ledger whose streams share the payment streams'
// feed, their reconciliation items (Flagged, Cleared, Resolved, Reopened)
// and their postings: the bank account (domain/bankstatement). Their own
// event types carry a prefix ("bank.") and a codec registered here, so that
// every reader of the feed and of a stream (projections, the operators'
// actions, the ingest decider) decodes them through Decode without knowing
// them; their events post through Poster.

// Extension is the codec of another aggregate's event types.
type Extension struct {
	Prefix string // of every type it encodes ("bank.")
	Decode func(typ string, data []byte) (Event, error)
	// Encode returns ok false for an event that is not its own.
	Encode func(e Event) (typ string, data []byte, ok bool, err error)
	// ReconKinds are the reconciliation item kinds it opens (ReconKinds
	// lists them with the payments').
	ReconKinds []string
}

var (
	extMu      sync.RWMutex
	extensions []Extension
)

// RegisterExtension adds an aggregate's codec (from its package's init).
func RegisterExtension(x Extension) {
	extMu.Lock()
	defer extMu.Unlock()
	for _, e := range extensions {
		if e.Prefix == x.Prefix {
			return
		}
	}
	extensions = append(extensions, x)
}

func decodeExtension(typ string, data []byte) (Event, bool, error) {
	extMu.RLock()
	defer extMu.RUnlock()
	for _, x := range extensions {
		if strings.HasPrefix(typ, x.Prefix) {
			e, err := x.Decode(typ, data)
			return e, true, err
		}
	}
	return nil, false, nil
}

func encodeExtension(e Event) (string, []byte, bool, error) {
	extMu.RLock()
	defer extMu.RUnlock()
	for _, x := range extensions {
		if typ, data, ok, err := x.Encode(e); ok || err != nil {
			return typ, data, ok, err
		}
	}
	return "", nil, false, nil
}

func extensionReconKinds() []string {
	extMu.RLock()
	defer extMu.RUnlock()
	var out []string
	for _, x := range extensions {
		out = append(out, x.ReconKinds...)
	}
	return out
}

// Poster is an event of another aggregate that posts: Postings returns its
// entries (balanced per currency, like every event's).
type Poster interface {
	Postings() []ledger.Posting
}
