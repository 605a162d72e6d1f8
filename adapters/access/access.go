// Package access owns who may do what with the two front ends, the /v1 API
// (adapters/httpapi) and the console (adapters/console): it parses the
// configured bearer tokens (ONCELEDGER_API_TOKENS for readers,
// ONCELEDGER_ADMIN_TOKENS for admins, who also act) into principals, each
// with the actor name recorded on what it does, authenticates a presented
// token in constant time, and defines the console's Session (a principal
// signed in, known by the digest of its token), which the session store
// (adapters/postgres/sessionstore) keeps. It imports neither front end nor
// any storage.
package access

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Role says what a principal may do.
type Role string

const (
	// Read may read /v1 and the console.
	Read Role = "read"
	// Admin may also act: settlement uploads, resolving items, redrive,
	// erase, period close.
	Admin Role = "admin"
	// Writer is the merchant's order service (ONCELEDGER_WRITER_TOKENS): it
	// may read, and register and cancel expected payments, nothing else.
	Writer Role = "writer"
)

// CanExpect reports whether the role may register and cancel expected
// payments (POST /v1/expected-payments, …/cancel): writers and admins.
func (r Role) CanExpect() bool { return r == Writer || r == Admin }

// CanExpect reports whether p may register and cancel expected payments.
func (p Principal) CanExpect() bool { return p.Role.CanExpect() }

// CanAct reports whether the role may use acting endpoints.
func (r Role) CanAct() bool { return r == Admin }

// Principal is who presented a token: the actor recorded on actions and
// the token's role.
type Principal struct {
	Actor string
	Role  Role
}

// CanAct reports whether p may use acting endpoints.
func (p Principal) CanAct() bool { return p.Role.CanAct() }

// Digest is the SHA-256 of a token. Sessions keep it instead of the token so
// that a session dies with its token when the token is removed from the
// configuration, and so that a stolen session table holds no usable token.
type Digest [sha256.Size]byte

// DigestOf returns the digest of token.
func DigestOf(token string) Digest { return sha256.Sum256([]byte(token)) }

// ErrBadTokenList is wrapped by every configuration error of Parse.
var ErrBadTokenList = errors.New("bad token list")

type entry struct {
	digest    Digest
	principal Principal
}

// Tokens is the parsed configuration. The zero value (and a Tokens from
// two empty lists) authenticates nobody: closed by default.
type Tokens struct {
	entries []entry
}

// names may contain what people and systems put in user names; no '=' or
// ',' (the list syntax) and no spaces.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9._@:+-]{1,64}$`)

// Parse reads the two comma-separated lists, as the environment holds them;
// see New.
func Parse(readTokens, adminTokens string) (*Tokens, error) {
	return New(strings.Split(readTokens, ","), strings.Split(adminTokens, ","))
}

// New reads the entries of the two lists (as a flag parser splits them). An entry is a bare token or
// "name=token"; the name is the actor recorded on actions. A bare token's
// actor is "token-" and the first 6 hex digits of its SHA-256: stable across
// restarts and instances, and telling nothing usable about the token.
//
// Base64 tokens may end in '=' padding, so an entry whose only '=' signs
// are trailing is a bare token; otherwise the text before the first '=' is
// the name. Empty entries (a trailing comma) are skipped. A token listed
// twice, or a malformed name, is an error: a token silently counted as read
// when it was meant as admin (or the reverse) is a security bug.
func New(readTokens, adminTokens []string) (*Tokens, error) {
	return NewWithWriters(readTokens, nil, adminTokens)
}

// NewWithWriters is New with a third list, the writer tokens
// (ONCELEDGER_WRITER_TOKENS, Role Writer), read the same way; a token listed
// under two roles is an error like any token listed twice.
func NewWithWriters(readTokens, writerTokens, adminTokens []string) (*Tokens, error) {
	t := &Tokens{}
	seen := map[Digest]Role{}
	for _, list := range []struct {
		env  string
		list []string
		role Role
	}{{"ONCELEDGER_API_TOKENS", readTokens, Read}, {"ONCELEDGER_ADMIN_TOKENS", adminTokens, Admin},
		{"ONCELEDGER_WRITER_TOKENS", writerTokens, Writer}} {
		for i, raw := range list.list {
			raw = strings.TrimSpace(raw)
			if raw == "" {
				continue
			}
			name, token, err := splitEntry(raw)
			if err != nil {
				return nil, fmt.Errorf("%w: %s entry %d: %w", ErrBadTokenList, list.env, i+1, err)
			}
			d := DigestOf(token)
			if prev, dup := seen[d]; dup {
				return nil, fmt.Errorf("%w: %s entry %d: the same token is already listed (as %s)", ErrBadTokenList, list.env, i+1, prev)
			}
			seen[d] = list.role
			if name == "" {
				name = "token-" + hex.EncodeToString(d[:3])
			}
			t.entries = append(t.entries, entry{digest: d, principal: Principal{Actor: name, Role: list.role}})
		}
	}
	return t, nil
}

func splitEntry(raw string) (name, token string, err error) {
	if !strings.Contains(strings.TrimRight(raw, "="), "=") {
		return "", raw, nil
	}
	name, token, _ = strings.Cut(raw, "=")
	name, token = strings.TrimSpace(name), strings.TrimSpace(token)
	if !namePattern.MatchString(name) {
		return "", "", fmt.Errorf("name %q: want 1 to 64 of A-Z a-z 0-9 . _ @ : + -", name)
	}
	if token == "" {
		return "", "", fmt.Errorf("name %q has an empty token", name)
	}
	return name, token, nil
}

// Configured reports whether any token is configured.
func (t *Tokens) Configured() bool { return t != nil && len(t.entries) > 0 }

// Authenticate returns the principal of a presented bearer token. The token
// is hashed first and every configured digest is compared in constant time,
// with no early exit, so the time taken tells neither whether nor which
// token matched. The empty token never matches.
func (t *Tokens) Authenticate(bearer string) (Principal, bool) {
	if bearer == "" {
		return Principal{}, false
	}
	return t.Lookup(DigestOf(bearer))
}

// Lookup is Authenticate for a token known by its digest (a session's).
func (t *Tokens) Lookup(d Digest) (Principal, bool) {
	if t == nil {
		return Principal{}, false
	}
	found := -1
	for i := range t.entries {
		eq := subtle.ConstantTimeCompare(d[:], t.entries[i].digest[:])
		// found = i when eq, without a data-dependent branch.
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 {
		return Principal{}, false
	}
	return t.entries[found].principal, true
}
