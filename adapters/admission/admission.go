// Package admission decides, before a handler reads anything of a request,
// whether the server takes it: the connection budget (how many
// connections, from one address and in all, and which are closed first
// when the budget is spent) and the in-flight budget (how much work of each
// class runs at once; what is beyond it is answered 503 or 429 with
// Retry-After before its body is read or its signature checked, so that a
// request the server cannot serve costs it almost nothing).
//
// Classes, highest priority first: health checks (/healthz, /readyz,
// /metrics: never shed), webhooks (/webhooks/...), uploads (settlement
// reports, bank statements, console uploads), reads (everything else: /v1
// GETs, the console, the long polls of GET /v1/events?wait=). A lower class
// is shed first: reads are refused once the work in flight reaches half
// of MaxInFlight, uploads at three quarters, webhooks only at MaxInFlight.
//
// A Controller is used four ways by one http.Server: Listener wraps its
// listener (the connection budget), ConnContext ties each request to its
// connection, ConnState sees a connection become idle, and Middleware wraps
// its handler (the in-flight budget).
// docs/security.md lists every limit and what an operator sees when one is
// reached.
package admission

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Class is what a request is, for its priority.
type Class int

// The classes, highest priority first.
const (
	Health Class = iota
	Webhook
	Upload
	Read
	numClasses
)

var classNames = [numClasses]string{"health", "webhook", "upload", "read"}

func (c Class) String() string { return classNames[c] }

// Defaults of Limits (the documented defaults of serve's variables).
const (
	DefaultMaxConnections           = 1024
	DefaultReservedConnections      = 256
	DefaultMaxConnectionsPerAddress = 128
	DefaultMaxInFlight              = 256
	DefaultMaxInFlightUploads       = 4
	DefaultMaxInFlightReads         = 64
	DefaultMaxLongPolls             = 256
	DefaultMaxLongPollsPerToken     = 32
	DefaultQueueWait                = 50 * time.Millisecond
)

// Retry-After values of the answers. A shed webhook or read is retried
// after a second (providers honour Retry-After or back off on their own);
// a long poll over its cap after 5 s: it was going to wait anyway.
const (
	retryAfterOverload = "1"
	retryAfterLongPoll = "5"
)

// Limits are the budgets. Zero takes the default; a negative value turns
// that limit off.
type Limits struct {
	// MaxConnections bounds the connections open at once.
	MaxConnections int
	// ReservedConnections of MaxConnections are for health checks and
	// webhooks: reads, uploads and long polls together are never served on
	// more than MaxConnections-ReservedConnections connections at once.
	ReservedConnections int
	// MaxConnectionsPerAddress bounds one client address's connections
	// (an IPv6 client's /64: clientKey; behind a reverse proxy every
	// connection has the proxy's address).
	// Loopback clients are not bounded unless CountLoopback: they are
	// processes of this machine (a local proxy, a benchmark's generator
	// opening a connection per late delivery), which have other ways to
	// exhaust it anyway. Below the half of MaxInFlight by default, so that
	// one address stalling webhook bodies cannot hold every webhook slot.
	MaxConnectionsPerAddress int
	CountLoopback            bool
	// MaxInFlight bounds the requests doing work at once (webhooks,
	// uploads, reads; not health checks, not long polls while they wait).
	// Reads are shed from half of it, uploads from three quarters.
	MaxInFlight int
	// MaxInFlightUploads and MaxInFlightReads bound their classes alone.
	MaxInFlightUploads int
	MaxInFlightReads   int
	// MaxLongPolls bounds GET /v1/events?wait= waiting at once, in all and
	// per bearer token.
	MaxLongPolls         int
	MaxLongPollsPerToken int
	// QueueWait is how long a request may wait for an in-flight slot before
	// it is shed (a burst is absorbed instead of refused); 0 takes the
	// default, <0 = no wait.
	QueueWait time.Duration
	// FreshGrace: a fresh connection younger than this is closed to make
	// room only when no other can be (its client is likely writing its
	// request right now, and would see EOF); 0 takes the default
	// (DefaultFreshGrace), <0 = none.
	FreshGrace time.Duration
}

// DefaultFreshGrace is FreshGrace's default: far above the time a client
// takes to write its request once connected, far below the header timeout.
const DefaultFreshGrace = 100 * time.Millisecond

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.MaxConnections, DefaultMaxConnections)
	def(&l.ReservedConnections, DefaultReservedConnections)
	def(&l.MaxConnectionsPerAddress, DefaultMaxConnectionsPerAddress)
	def(&l.MaxInFlight, DefaultMaxInFlight)
	def(&l.MaxInFlightUploads, DefaultMaxInFlightUploads)
	def(&l.MaxInFlightReads, DefaultMaxInFlightReads)
	def(&l.MaxLongPolls, DefaultMaxLongPolls)
	def(&l.MaxLongPollsPerToken, DefaultMaxLongPollsPerToken)
	if l.QueueWait == 0 {
		l.QueueWait = DefaultQueueWait
	}
	if l.FreshGrace == 0 {
		l.FreshGrace = DefaultFreshGrace
	}
	if l.MaxConnections > 0 && l.ReservedConnections >= l.MaxConnections {
		// A reserve of everything would leave readers nothing; keep one.
		l.ReservedConnections = l.MaxConnections - 1
	}
	return l
}

// Controller is the admission of one server. Safe for concurrent use.
type Controller struct {
	lim     Limits
	log     *slog.Logger
	metrics *metrics
	gate    *gate

	mu       sync.Mutex
	conns    connTable
	readers  int            // requests of Upload and Read (long polls too) in a handler
	polls    int            // long polls in a handler
	perToken map[string]int // long polls in a handler per bearer token
	logged   [numClasses][numReasons]shedLog

	refusedMu    sync.Mutex
	refusedLast  map[string]int64
	refusedSince map[string]int
}

// New returns a Controller with lim (zero fields take the defaults),
// registering its metrics with reg (nil: not registered) and logging to
// log (nil: slog.Default).
func New(lim Limits, reg prometheus.Registerer, log *slog.Logger) *Controller {
	lim = lim.withDefaults()
	if log == nil {
		log = slog.Default()
	}
	c := &Controller{
		lim:      lim,
		log:      log,
		perToken: map[string]int{},
		conns:    newConnTable(),
	}
	c.gate = newGate(lim)
	c.metrics = newMetrics(c)
	if reg != nil {
		c.metrics.register(reg)
	}
	return c
}

// Limits returns the limits in force (defaults applied).
func (c *Controller) Limits() Limits { return c.lim }

// Classify says which class r is, and whether it is a long poll (a GET
// /v1/events with a wait). It looks at the method, path and query only.
func Classify(r *http.Request) (Class, bool) {
	p := r.URL.Path
	switch {
	case p == "/healthz" || p == "/readyz" || p == "/metrics":
		return Health, false
	case strings.HasPrefix(p, "/webhooks/"):
		return Webhook, false
	case r.Method == http.MethodPost && (strings.HasPrefix(p, "/v1/settlements/") ||
		strings.HasPrefix(p, "/v1/bank-statements") ||
		strings.HasPrefix(p, "/console/") && strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/")):
		return Upload, false
	case p == "/v1/events" && r.Method == http.MethodGet && waits(r.URL.RawQuery):
		return Read, true
	}
	return Read, false
}

// waits says whether a query string asks for a long poll: a wait other
// than zero. A malformed one counts as a wait (the handler answers 400 at
// once; counting it costs nothing). The query is decoded as the handler
// decodes it (url.ParseQuery): matching the raw text for "wait=" let an
// escaped key (wai%74=60s) wait without meeting the long-poll caps,
// holding a read's in-flight slot instead.
func waits(raw string) bool {
	if !strings.Contains(raw, "wait") && !strings.Contains(raw, "%") {
		return false // the common page read: no decoding needed
	}
	q, _ := url.ParseQuery(raw) // what parses is what the handler sees
	for _, v := range q["wait"] {
		if d, err := time.ParseDuration(v); err == nil && d <= 0 {
			continue
		}
		if v != "" {
			return true
		}
	}
	return false
}

// bearer is the request's bearer token ("" when none): long polls are
// capped per token before the handler authenticates, so an invalid token
// counts too, for the few microseconds until its 401. It is read as the
// handler's authentication reads it (httpapi.bearerToken: the scheme in
// any case, then spaces, then the token), so that one token is one key
// however many spaces precede it.
func bearer(r *http.Request) string {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// Middleware wraps next with the in-flight budget: each request is
// classified, tied to its connection (which then is neither fresh nor idle
// and cannot be evicted), and admitted or shed before next runs.
func (c *Controller) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		class, poll := Classify(r)
		cn, _ := r.Context().Value(connKey{}).(*conn)
		c.enter(cn) // idle again at ConnState(StateIdle), once its answer is written
		if class == Health {
			c.servedBy(cn, class, 0)
			next.ServeHTTP(w, r)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		defer func() { c.servedBy(cn, class, sw.code) }()
		w = sw
		if class != Webhook {
			if !c.takeReader(poll, bearer(r), w, r, class) {
				return
			}
			defer c.dropReader(poll, bearer(r))
			if poll {
				// A waiting poll does no work: the long-poll caps bound it.
				next.ServeHTTP(w, r)
				return
			}
		}
		release, ok := c.gate.acquire(r.Context(), class)
		if !ok {
			c.shed(w, r, class, reasonInFlight, http.StatusServiceUnavailable, retryAfterOverload)
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}

// takeReader counts a request of a reader class (Upload, Read) against the
// readers' share of the connections and, for a long poll, against the
// long-poll caps; false: it was shed.
func (c *Controller) takeReader(poll bool, token string, w http.ResponseWriter, r *http.Request, class Class) bool {
	c.mu.Lock()
	share := c.lim.MaxConnections - c.lim.ReservedConnections
	if c.lim.MaxConnections > 0 && c.readers >= share {
		c.mu.Unlock()
		c.shed(w, r, class, reasonReserved, http.StatusServiceUnavailable, retryAfterOverload)
		return false
	}
	if poll {
		if c.lim.MaxLongPolls > 0 && c.polls >= c.lim.MaxLongPolls {
			c.mu.Unlock()
			c.shed(w, r, class, reasonLongPolls, http.StatusTooManyRequests, retryAfterLongPoll)
			return false
		}
		if c.lim.MaxLongPollsPerToken > 0 && c.perToken[token] >= c.lim.MaxLongPollsPerToken {
			c.mu.Unlock()
			c.shed(w, r, class, reasonLongPollsToken, http.StatusTooManyRequests, retryAfterLongPoll)
			return false
		}
		c.polls++
		c.perToken[token]++
	}
	c.readers++
	c.mu.Unlock()
	return true
}

func (c *Controller) dropReader(poll bool, token string) {
	c.mu.Lock()
	c.readers--
	if poll {
		c.polls--
		if c.perToken[token]--; c.perToken[token] <= 0 {
			delete(c.perToken, token)
		}
	}
	c.mu.Unlock()
}

// Shedding a request with a small body keeps its connection when the body
// comes at once: net/http discards an unread body of up to 256 kB before
// writing the answer, so that the connection can carry the next request.
// The discard may wait shedDrain for the body, no longer (a read
// deadline); a body that has not arrived by then closes the connection,
// as one larger than shedDrainMax does at once.
//
// Why keep it: closing the connection of every shed request (sessions
// 7-8) made each one cost a new connection at both ends (accept, the
// handshake, a connection goroutine, the client's dial), on the cores
// the server was short of: at 150 % of the maximum, a third of the
// deliveries are shed. Providers send a webhook's headers and its few
// kB of body at once, so the body is in the socket buffer (often in the
// same read as the headers) when the answer is written.
const (
	shedDrainMax = 64 << 10
	shedDrain    = 20 * time.Millisecond
)

// shed answers a request the server does not take, without reading its
// body in the handler. A body announced and larger than shedDrainMax (or
// of unknown length) closes the connection after the answer, so that a
// sender that announced a body it never sends cannot hold the answer
// until the read deadline; a smaller one is discarded by net/http within
// shedDrain, else the connection closes too. (Answering first and
// discarding after, with EnableFullDuplex, keeps the connection but
// panics in net/http when the unread body's end arrives during the
// discard, Go 1.26.)
func (c *Controller) shed(w http.ResponseWriter, r *http.Request, class Class, reason reason, status int, retryAfter string) {
	c.metrics.shed[class][reason].Inc()
	c.logShed(class, reason, r)
	h := w.Header()
	h.Set("Retry-After", retryAfter)
	h.Set("Content-Type", "application/json")
	if r.ContentLength != 0 {
		if r.ContentLength < 0 || r.ContentLength > shedDrainMax ||
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(shedDrain)) != nil {
			h.Set("Connection", "close")
		}
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"error":"` + reasonMessages[reason] + `"}`))
}

// logShed logs a shed request at most once a second per class and reason,
// with how many were shed since the last line: under overload a line per
// request would cost what the shedding saves.
func (c *Controller) logShed(class Class, reason reason, r *http.Request) {
	now := time.Now()
	c.mu.Lock()
	l := &c.logged[class][reason]
	l.since++
	if now.Sub(l.last) < time.Second {
		c.mu.Unlock()
		return
	}
	n := l.since
	l.last, l.since = now, 0
	c.mu.Unlock()
	c.log.Warn("request shed", "class", class.String(), "reason", reason.String(), "path", r.URL.Path,
		"shed_since_last_line", n, "remote", r.RemoteAddr)
}

type shedLog struct {
	last  time.Time
	since int
}

// reason is why a request or connection was refused.
type reason int

const (
	reasonInFlight       reason = iota // the class's in-flight budget
	reasonReserved                     // the readers' share of the connections
	reasonLongPolls                    // MaxLongPolls
	reasonLongPollsToken               // MaxLongPollsPerToken
	numReasons
)

var reasonNames = [numReasons]string{"in_flight", "reserved_connections", "long_polls", "long_polls_per_token"}

var reasonMessages = [numReasons]string{
	"overloaded: too many requests of this kind in flight; retry later",
	"overloaded: the connections left to reads are all in use; retry later",
	"too many long polls waiting on this server; retry later",
	"too many long polls waiting for this token; retry later",
}

func (r reason) String() string { return reasonNames[r] }

type connKey struct{}

// ConnContext is http.Server.ConnContext: it ties the requests of a
// connection Listener accepted to it.
func (c *Controller) ConnContext(ctx context.Context, nc net.Conn) context.Context {
	if cn, ok := nc.(*conn); ok {
		return context.WithValue(ctx, connKey{}, cn)
	}
	return ctx
}
