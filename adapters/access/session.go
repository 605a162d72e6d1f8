package access

import "time"

// Session is one signed-in browser of the console: the principal it signed
// in as, and the digest of the token it signed in with, so that it ends
// when that token is removed from the configuration. Only the SHA-256 of
// the session's id is kept (IDHash): a read of the stored sessions yields
// no usable session.
type Session struct {
	IDHash      [32]byte
	Actor       string
	Role        Role
	TokenDigest Digest
	CreatedAt   time.Time
	ExpiresAt   time.Time
}
