package console

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
)

// Cursors are opaque to the browser: base64url of the JSON of a list's
// keyset key, followed by a truncated SHA-256 of it, so that an edited or
// truncated cursor is refused (400) rather than read as another position.
// The checksum is no secret: a cursor grants nothing a viewer could not
// reach by paging.
const cursorSumLen = 6

var errBadCursor = errors.New("cursor: not a cursor this console handed out")

func encodeCursor(key any) string {
	b, _ := json.Marshal(key)
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(append(b, sum[:cursorSumLen]...))
}

// decodeCursor decodes s into a new *K; "" is nil (the first page).
func decodeCursor[K any](s string) (*K, error) {
	if s == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(raw) <= cursorSumLen {
		return nil, errBadCursor
	}
	doc, sum := raw[:len(raw)-cursorSumLen], raw[len(raw)-cursorSumLen:]
	want := sha256.Sum256(doc)
	if !bytes.Equal(sum, want[:cursorSumLen]) {
		return nil, errBadCursor
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	k := new(K)
	if err := dec.Decode(k); err != nil {
		return nil, errBadCursor
	}
	return k, nil
}
