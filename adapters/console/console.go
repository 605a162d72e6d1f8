// Package console owns the web console under /console: server-rendered
// pages (html/template, embedded assets, no JavaScript) for accountants and
// operators, sign-in with an API token (package access) into a server-side
// session, and the forms that act (resolve or reopen a reconciliation
// item, redrive deliveries) through the acting ports. It owns presentation
// only: it reads through ports it declares (ports.go) in the types of the
// one read side (projections/views), the same query methods the /v1 API
// calls (readmodel.Store, projections.StatusReader,
// projections.PaymentHistory), parses its parameters with the shared
// parser (package params), and imports no storage adapter.
//
// Security: the token is posted once (never in a URL) and exchanged for a
// random session id in an HttpOnly, SameSite=Strict cookie (Secure when the
// request came over TLS, or always with Config.SecureCookies). Sessions are
// stored server-side (Sessions port) as the SHA-256 of their id, so that
// signing out ends them everywhere and several instances share them; each
// request re-checks that the token signed in with is still configured, with
// its current role. Every acting form carries a CSRF token derived from the
// session id, and every unsafe request must also pass net/http's
// CrossOriginProtection (Sec-Fetch-Site / Origin), which refuses cross-site
// POSTs before any handler runs. Pages carry a strict Content-Security-
// Policy (no script at all), X-Frame-Options: DENY and Referrer-Policy:
// same-origin.
package console

import (
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/onceledger/onceledger/adapters/access"
	"github.com/onceledger/onceledger/projections"
)

// Prefix is the path the console is served under. Mount the handler of New
// there: mux.Handle("/console", h) and mux.Handle("/console/", h) (gorilla:
// r.PathPrefix("/console").Handler(h)).
const Prefix = "/console"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config wires the console.
type Config struct {
	// Tokens decides who may sign in and what they may do
	// (ONCELEDGER_API_TOKENS, ONCELEDGER_ADMIN_TOKENS). Required.
	Tokens *access.Tokens
	// Sessions stores sessions. Required.
	Sessions Sessions
	// Read is the read model. Required.
	Read ReadModel
	// Projections reports the projections' status and lag. Required.
	Projections ProjectionsReader
	// Events reads a payment's stream for its timeline (the configured
	// event store); nil shows no events.
	Events projections.StreamReader
	// Periods lists the accounting periods with their trial balances; nil
	// shows the trial balance of the whole ledger instead.
	Periods PeriodReader
	// PeriodActions closes and reopens periods (admin); nil answers its
	// forms with 503 "not configured".
	PeriodActions PeriodActions
	// Recon and Redrive act; nil answers their forms with 503 "not
	// configured".
	Recon   ReconActions
	Redrive Redriver
	// Subscriptions lists push subscriptions and acts on them (admin
	// only); nil answers its pages with 503 "not configured".
	Subscriptions Subscriptions
	// Balances reads the balance assertions and provider days;
	// BalanceActs posts adjustments and opening balances (balances.go).
	// nil answers their pages with 503 "not configured".
	Balances    BalanceReader
	BalanceActs BalanceActions
	// Expected lists the expected payments (expected.go); nil answers its
	// page with 503 "not configured".
	Expected ExpectedReader
	// SessionTTL is how long a sign-in lasts (default 8h).
	SessionTTL time.Duration
	// SecureCookies marks the cookie Secure even for plain-HTTP requests
	// (behind a TLS-terminating proxy). Requests over TLS always get it.
	SecureCookies bool
	// PageSize is the rows per list page (default 50).
	PageSize int
	// Zone is the time zone pages show times in, named next to each
	// (ONCELEDGER_REPORTING_TZ, the zone of the accounting periods; nil: UTC).
	Zone *time.Location
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger (default: discard).
	Logger *slog.Logger
}

// ErrConfig is wrapped by New's errors.
var ErrConfig = errors.New("console: bad configuration")

// New returns the console's handler, to be mounted at Prefix.
func New(cfg Config) (http.Handler, error) {
	switch {
	case cfg.Tokens == nil:
		return nil, fmt.Errorf("%w: no Tokens", ErrConfig)
	case cfg.Sessions == nil:
		return nil, fmt.Errorf("%w: no Sessions", ErrConfig)
	case cfg.Read == nil:
		return nil, fmt.Errorf("%w: no Read model", ErrConfig)
	case cfg.Projections == nil:
		return nil, fmt.Errorf("%w: no Projections reader", ErrConfig)
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 8 * time.Hour
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = 50
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Zone == nil {
		cfg.Zone = time.UTC
	}
	pages, err := parsePages(cfg.Zone)
	if err != nil {
		return nil, err
	}
	c := &consoleServer{cfg: cfg, pages: pages}
	return c.routes(), nil
}

type consoleServer struct {
	cfg   Config
	pages map[string]*pageTemplate
}

func (c *consoleServer) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /console/static/", http.StripPrefix(Prefix, http.FileServerFS(staticFS)))
	mux.HandleFunc("GET /console/signin", c.signInPage)
	mux.HandleFunc("POST /console/signin", c.signIn)
	mux.HandleFunc("POST /console/signout", c.withSession(c.signOut))

	mux.HandleFunc("GET /console", c.withSession(c.overview))
	mux.HandleFunc("GET /console/{$}", c.withSession(c.overview))
	mux.HandleFunc("GET /console/payments", c.withSession(c.payments))
	mux.HandleFunc("GET /console/payments/{provider}/{id}", c.withSession(c.payment))
	mux.HandleFunc("GET /console/search", c.withSession(c.search))
	mux.HandleFunc("GET /console/reconciliation", c.withSession(c.reconciliation))
	mux.HandleFunc("POST /console/reconciliation/resolve", c.withSession(c.acting(c.resolve)))
	mux.HandleFunc("POST /console/reconciliation/reopen", c.withSession(c.acting(c.reopen)))
	mux.HandleFunc("POST /console/reconciliation/bulk", c.withSession(c.acting(c.bulk)))
	mux.HandleFunc("GET /console/inbox", c.withSession(c.inbox))
	mux.HandleFunc("GET /console/inbox/delivery", c.withSession(c.delivery))
	mux.HandleFunc("POST /console/inbox/redrive", c.withSession(c.acting(c.redrive)))
	mux.HandleFunc("GET /console/payouts", c.withSession(c.payouts))
	mux.HandleFunc("GET /console/expected", c.withSession(c.expected)) // expected.go
	mux.HandleFunc("GET /console/payouts/{provider}/{id}", c.withSession(c.payout))
	mux.HandleFunc("GET /console/bank", c.withSession(c.bank))                  // bank.go
	mux.HandleFunc("GET /console/bank/{account}", c.withSession(c.bankAccount)) // bank.go
	mux.HandleFunc("GET /console/periods", c.withSession(c.periods))
	mux.HandleFunc("POST /console/periods/close", c.withSession(c.acting(c.closePeriod)))
	mux.HandleFunc("POST /console/periods/reopen", c.withSession(c.acting(c.reopenPeriod)))
	mux.HandleFunc("GET /console/periods/{period}/trial-balance.csv", c.withSession(c.periodTrialCSV))
	mux.HandleFunc("GET /console/periods/{period}/journal.csv", c.withSession(c.periodJournalCSV))
	mux.HandleFunc("GET /console/projections", c.withSession(c.projections))
	mux.HandleFunc("GET /console/subscriptions", c.withSession(c.adminOnly(c.subscriptions)))
	mux.HandleFunc("GET /console/subscriptions/{id}", c.withSession(c.adminOnly(c.subscription)))
	mux.HandleFunc("POST /console/subscriptions/enable", c.withSession(c.acting(c.enableSubscription)))
	mux.HandleFunc("POST /console/subscriptions/replay", c.withSession(c.acting(c.replaySubscription)))
	c.balanceRoutes(mux) // balances.go
	mux.HandleFunc("/console/", c.notFound)

	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.errorPage(w, r, nil, http.StatusForbidden, "Cross-origin request refused: this form was not sent from the console.")
	}))
	return securityHeaders(cop.Handler(mux))
}

// contentSecurityPolicy allows the console's own stylesheet and images and
// nothing else: no script of any origin, no framing, forms only to itself.
const contentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		// Ledger data stays out of shared and browser caches.
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}
