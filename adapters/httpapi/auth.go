package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"

	"github.com/onceledger/onceledger/adapters/access"
)

// tokenAuth authenticates /v1 requests by their bearer token against the
// configured read and admin tokens (package access: constant time, every
// token compared) and puts the principal in the request's context, where
// acting handlers find the actor and check the role. With no token
// configured every request is refused: the query API is closed by default.
type tokenAuth struct {
	tokens *access.Tokens
	err    error // the token configuration could not be read: every request is refused
}

// middleware answers 401 with a WWW-Authenticate challenge (RFC 6750) unless
// the request carries a valid bearer token.
func (a *tokenAuth) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r.Header.Get("Authorization"))
		p, valid := a.tokens.Authenticate(token)
		switch {
		case !ok:
			w.Header().Set("WWW-Authenticate", `Bearer realm="onceledger"`)
			fail(w, fmt.Errorf("%w: send Authorization: Bearer <token>", errUnauthenticated))
		case a.err != nil || !a.tokens.Configured():
			w.Header().Set("WWW-Authenticate", `Bearer realm="onceledger", error="invalid_token"`)
			fail(w, fmt.Errorf("%w: no API token is configured on this server (ONCELEDGER_API_TOKENS, ONCELEDGER_ADMIN_TOKENS)", errUnauthenticated))
		case !valid:
			w.Header().Set("WWW-Authenticate", `Bearer realm="onceledger", error="invalid_token"`)
			fail(w, errUnauthenticated)
		default:
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
		}
	})
}

type principalKey struct{}

// Principal is who sent the request (set by the /v1 token check).
func Principal(ctx context.Context) (access.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(access.Principal)
	return p, ok
}

// acting wraps a handler of an acting endpoint (settlement upload, resolve,
// reopen, redrive, erase, period close): only an admin token may call it; a
// read token gets 403. The handler finds the actor with Principal.
func acting(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := Principal(r.Context()); !ok || !p.CanAct() {
			fail(w, fmt.Errorf("%w: this endpoint acts on the ledger and needs an admin token (ONCELEDGER_ADMIN_TOKENS)", errForbidden))
			return
		}
		next(w, r)
	})
}

// bearerAuth checks "Authorization: Bearer <token>" against one fixed set of
// tokens (the metrics token). Both sides are hashed with SHA-256 before the
// constant-time comparison, and every token is compared (no early exit).
type bearerAuth struct {
	digests [][sha256.Size]byte
}

func newBearerAuth(tokens []string) *bearerAuth {
	a := &bearerAuth{}
	for _, t := range tokens {
		// An empty entry ("a,,b" or a trailing comma) must not turn into
		// "the empty token is valid".
		if t = strings.TrimSpace(t); t != "" {
			a.digests = append(a.digests, sha256.Sum256([]byte(t)))
		}
	}
	return a
}

// valid reports whether token is one of the configured tokens.
func (a *bearerAuth) valid(token string) bool {
	got := sha256.Sum256([]byte(token))
	match := 0
	for i := range a.digests {
		match |= subtle.ConstantTimeCompare(got[:], a.digests[i][:])
	}
	return match == 1 && token != ""
}

// middleware answers 401 with a WWW-Authenticate challenge (RFC 6750) unless
// the request carries a valid bearer token.
func (a *bearerAuth) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r.Header.Get("Authorization"))
		switch {
		case !ok:
			w.Header().Set("WWW-Authenticate", `Bearer realm="onceledger"`)
			fail(w, fmt.Errorf("%w: send Authorization: Bearer <token>", errUnauthenticated))
		case !a.valid(token):
			w.Header().Set("WWW-Authenticate", `Bearer realm="onceledger", error="invalid_token"`)
			fail(w, errUnauthenticated)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// bearerToken extracts the token of an "Authorization: Bearer <token>"
// header; the scheme is case-insensitive (RFC 7235).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
