package outbound

import (
	"encoding/base64"
	"encoding/binary"
	"errors"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// ErrBadCursor: a cursor this feed did not hand out.
var ErrBadCursor = errors.New("invalid cursor")

// cursorVersion is the first byte of every cursor, so that the encoding can
// change without misreading old cursors.
const cursorVersion = 1

// Cursor encodes a feed position as an opaque token. It is the position in
// the event store's global feed (docs/events.md), never a read-model row, so
// it stays valid across restarts, rebuilds and instances over the same
// event store.
func Cursor(p eventstore.Position) string {
	var b [17]byte
	b[0] = cursorVersion
	binary.BigEndian.PutUint64(b[1:], p.Commit)
	binary.BigEndian.PutUint64(b[9:], p.Prepare)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ParseCursor is the inverse of Cursor; "" is the start of the feed.
func ParseCursor(s string) (eventstore.Position, error) {
	if s == "" {
		return eventstore.Start, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 17 || b[0] != cursorVersion {
		return eventstore.Position{}, ErrBadCursor
	}
	return eventstore.Position{Commit: binary.BigEndian.Uint64(b[1:]), Prepare: binary.BigEndian.Uint64(b[9:])}, nil
}
