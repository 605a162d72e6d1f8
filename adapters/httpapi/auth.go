package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
)

// bearerAuth checks "Authorization: Bearer <token>" against the configured
// API tokens (ONCELEDGER_API_TOKENS).
//
// Both sides are hashed with SHA-256 before the constant-time comparison, so
// the time taken depends on neither the length nor the content of any
// token, and every configured token is compared (no early exit), so the
// time does not tell which of them, if any, matched. With no token
// configured every request is refused: the query API is closed by default.
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
		case len(a.digests) == 0:
			w.Header().Set("WWW-Authenticate", `Bearer realm="onceledger", error="invalid_token"`)
			fail(w, fmt.Errorf("%w: no API token is configured on this server (ONCELEDGER_API_TOKENS)", errUnauthenticated))
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
