package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/onceledger/onceledger/adapters/access"
)

// cookieName names the session cookie. It is scoped to Prefix.
const cookieName = "onceledger_console"

// viewer is who is looking at a page: the session's principal and the
// CSRF token of its forms.
type viewer struct {
	access.Principal
	idHash [32]byte
	csrf   string
}

type viewerKey struct{}

func viewerOf(r *http.Request) viewer {
	v, _ := r.Context().Value(viewerKey{}).(viewer)
	return v
}

// csrfToken derives a session's CSRF token from its secret id: unforgeable
// without the cookie, nothing to store, and the stored id hash does not
// reveal it (a different hash input).
func csrfToken(sessionID string) string {
	sum := sha256.Sum256([]byte("onceledger console csrf\x00" + sessionID))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func idHash(sessionID string) [32]byte { return sha256.Sum256([]byte(sessionID)) }

// withSession serves h to a signed-in viewer; others are sent to the
// sign-in page (a GET) or refused (anything else).
func (c *consoleServer) withSession(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, ok, err := c.session(r)
		if err != nil {
			c.errorPage(w, r, err, 0, "")
			return
		}
		if !ok {
			c.clearCookie(w, r)
			if r.Method == http.MethodGet {
				http.Redirect(w, r, Prefix+"/signin", http.StatusSeeOther)
				return
			}
			c.errorPage(w, r, nil, http.StatusUnauthorized, "Your session has ended; sign in again.")
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), viewerKey{}, v)))
	}
}

// session returns the viewer of a valid session. A session whose token is
// no longer configured has ended, even before it expires; the role is the
// token's current one.
func (c *consoleServer) session(r *http.Request) (viewer, bool, error) {
	ck, err := r.Cookie(cookieName)
	if err != nil || ck.Value == "" || len(ck.Value) > 128 {
		return viewer{}, false, nil
	}
	h := idHash(ck.Value)
	s, found, err := c.cfg.Sessions.Get(r.Context(), h, c.cfg.Now())
	if err != nil || !found {
		return viewer{}, false, err
	}
	p, ok := c.cfg.Tokens.Lookup(s.TokenDigest)
	if !ok {
		return viewer{}, false, c.cfg.Sessions.Delete(r.Context(), h)
	}
	return viewer{Principal: p, idHash: h, csrf: csrfToken(ck.Value)}, true, nil
}

// acting guards a form that acts: the viewer's role must allow acting and
// the form must carry the session's CSRF token. (Cross-site requests were
// refused before, by CrossOriginProtection.)
func (c *consoleServer) acting(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := viewerOf(r)
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		if err := r.ParseForm(); err != nil {
			c.errorPage(w, r, nil, http.StatusBadRequest, "The form could not be read.")
			return
		}
		if !validCSRF(r, v) {
			c.errorPage(w, r, nil, http.StatusForbidden, "The form's CSRF token is missing or stale: reload the page and try again.")
			return
		}
		if !v.CanAct() {
			c.errorPage(w, r, nil, http.StatusForbidden, "Your token ("+v.Actor+") may read but not act: acting needs an admin token (ONCELEDGER_ADMIN_TOKENS).")
			return
		}
		h(w, r)
	}
}

func validCSRF(r *http.Request, v viewer) bool {
	got := r.PostForm.Get("csrf")
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(v.csrf)) == 1
}

func (c *consoleServer) signInPage(w http.ResponseWriter, r *http.Request) {
	if _, ok, _ := c.session(r); ok {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	c.render(w, r, http.StatusOK, "signin", "Sign in", signInData{Configured: c.cfg.Tokens.Configured()})
}

type signInData struct {
	Configured bool
	Error      string
}

func (c *consoleServer) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		c.render(w, r, http.StatusBadRequest, "signin", "Sign in", signInData{Configured: true, Error: "The form could not be read."})
		return
	}
	token := strings.TrimSpace(r.PostForm.Get("token"))
	p, ok := c.cfg.Tokens.Authenticate(token)
	if !ok {
		c.cfg.Logger.Info("console sign-in refused", "remote", r.RemoteAddr)
		c.render(w, r, http.StatusUnauthorized, "signin", "Sign in",
			signInData{Configured: c.cfg.Tokens.Configured(), Error: "That token is not one this server accepts."})
		return
	}
	// A sign-in over an existing session replaces it (no session outlives
	// the cookie that named it).
	if old, err := r.Cookie(cookieName); err == nil && old.Value != "" && len(old.Value) <= 128 {
		if err := c.cfg.Sessions.Delete(r.Context(), idHash(old.Value)); err != nil {
			c.errorPage(w, r, err, 0, "")
			return
		}
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	id := base64.RawURLEncoding.EncodeToString(raw[:])
	now := c.cfg.Now()
	s := access.Session{IDHash: idHash(id), Actor: p.Actor, Role: p.Role, TokenDigest: access.DigestOf(token), CreatedAt: now, ExpiresAt: now.Add(c.cfg.SessionTTL)}
	if err := c.cfg.Sessions.Create(r.Context(), s); err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	c.cfg.Logger.Info("console sign-in", "actor", p.Actor, "role", p.Role)
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: id, Path: Prefix,
		MaxAge:   int(c.cfg.SessionTTL.Seconds()),
		HttpOnly: true, Secure: c.secure(r), SameSite: http.SameSiteStrictMode,
	})
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

func (c *consoleServer) signOut(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r)
	if err := r.ParseForm(); err != nil || !validCSRF(r, v) {
		c.errorPage(w, r, nil, http.StatusForbidden, "The form's CSRF token is missing or stale: reload the page and try again.")
		return
	}
	if err := c.cfg.Sessions.Delete(r.Context(), v.idHash); err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	c.clearCookie(w, r)
	http.Redirect(w, r, Prefix+"/signin", http.StatusSeeOther)
}

func (c *consoleServer) clearCookie(w http.ResponseWriter, r *http.Request) {
	if _, err := r.Cookie(cookieName); err != nil {
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: "", Path: Prefix, MaxAge: -1,
		HttpOnly: true, Secure: c.secure(r), SameSite: http.SameSiteStrictMode,
	})
}

func (c *consoleServer) secure(r *http.Request) bool { return c.cfg.SecureCookies || r.TLS != nil }

// notFound answers a path the console has no page for. A signed-in viewer
// keeps the navigation and is not offered "Sign in" (it read as a logout,
// issue 39); a visitor without a session is, as before.
func (c *consoleServer) notFound(w http.ResponseWriter, r *http.Request) {
	if v, ok, err := c.session(r); err == nil && ok {
		r = r.WithContext(context.WithValue(r.Context(), viewerKey{}, v))
	}
	c.errorPage(w, r, nil, http.StatusNotFound, "No such page.")
}
