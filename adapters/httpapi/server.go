// Package httpapi is onceledger's HTTP surface: the webhook endpoint
// POST /webhooks/{provider}, the bearer-protected /v1 query API and its
// acting endpoints (admin tokens: resolve, reopen, redrive, erase, period
// close and reopen, settlement uploads), the OpenAPI document at
// /openapi.json, health, readiness and Prometheus metrics. It verifies and normalizes through the
// provider adapters and records through the ingest service; it owns no
// business rule. It reads through ports it declares in the types of the
// one read side, projections/views (QueryStore, SettlementQuery,
// PeriodStore, ProjectionsReader, StatusSource), whose methods are the same
// queries the console makes (readmodel.Store, projections.StatusReader,
// projections.PaymentHistory); it parses parameters with the parser the
// console shares (package params), authenticates with package access, and
// imports no storage adapter. /readyz and /metrics answer from a Monitor's
// background readings.
package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/onceledger/onceledger/adapters/access"
	"github.com/onceledger/onceledger/adapters/providers"
)

// Config wires the handler. Zero values take the documented defaults.
type Config struct {
	Providers map[string]providers.Adapter // configured providers only: others answer 404
	// Unconfigured says why a provider this build has is not configured
	// (the variables that would configure it), for its 404; known is false
	// for a name no provider has. Nil: a plain 404.
	Unconfigured  func(provider string) (why string, known bool)
	Ingester      Ingester
	MaxBodyBytes  int64         // default 1 MiB
	IngestTimeout time.Duration // default 10s
	// BodyTimeout bounds the reading of one webhook body (a per-request
	// read deadline on the connection): a sender that trickles its body is
	// cut off with 400. Default 10s.
	BodyTimeout time.Duration
	// ProviderConcurrency caps in-flight webhooks per provider, so that a
	// burst from one provider cannot starve the others or exhaust the pool;
	// excess requests get 503 with Retry-After. Default
	// DefaultProviderConcurrency; <0 = no cap.
	ProviderConcurrency int
	Now                 func() time.Time
	Logger              *slog.Logger
	Registry            *prometheus.Registry // default: a new registry
	// Monitor answers /readyz and the database figures of /metrics from
	// its background readings (it is registered with Registry); nil =
	// always ready, no such figures.
	Monitor *Monitor
	// MetricsToken, when set (ONCELEDGER_METRICS_TOKEN), is the bearer
	// token /metrics requires.
	MetricsToken string
	// PublicURL returns the URL a provider signed (Square signs the
	// subscribed notification URL). Default: the request's URL as received.
	PublicURL func(r *http.Request) string
	// Routes, if set, registers further routes (the /v1 query API).
	Routes func(r *mux.Router)
	// APITokens are the bearer tokens of the /v1 query API
	// (ONCELEDGER_API_TOKENS); none = /v1 answers 401 to everyone.
	APITokens []string
	// AdminTokens may also act (ONCELEDGER_ADMIN_TOKENS). Entries of both
	// lists may be name=token; the name is the actor recorded on actions.
	AdminTokens []string
	// Tokens, if set, replaces APITokens and AdminTokens (already parsed).
	Tokens *access.Tokens
	// Query reads the read models for /v1 (readmodel.Store); nil = /v1
	// answers 503 after the token check.
	Query QueryStore
	// Events reads a payment's stream for GET /v1/payments/... (the
	// configured event store); nil = the answer lists no events.
	Events StreamReader
	// Eraser erases raw bodies for POST /v1/inbox/erase (admin); nil = that
	// endpoint answers 503.
	Eraser RawEraser
	// Projections reads the projections' status for GET /v1/projections
	// (projections.StatusReader); nil = that endpoint answers 503.
	Projections ProjectionsReader
	// Periods reads the periods, trial balances and the journal
	// (readmodel.Store); PeriodActions closes and reopens periods
	// (operations.Periods). nil = those endpoints answer 503.
	Periods       PeriodStore
	PeriodActions PeriodActions
	// ReportingZone is the time zone of accounting periods
	// (ONCELEDGER_REPORTING_TZ): journal dates and YYYY-MM-DD bounds are
	// in it. nil = UTC.
	ReportingZone *time.Location
	// Export writes GET /v1/export/{format} (bookexport.Exporter); nil =
	// that endpoint answers 503.
	Export Exporter
	// Recon and Redrive act (admin tokens): POST /v1/reconciliation/
	// resolve|reopen and POST /v1/inbox/redrive; nil = they answer 503.
	Recon   ReconActions
	Redrive InboxRedriver
	// Settlements imports uploaded settlement reports (POST
	// /v1/settlements/{provider}); SettlementQuery reads payouts and
	// their lines (GET /v1/payouts…). nil = those answer 503.
	Settlements     SettlementImporter
	SettlementQuery SettlementQuery
	// MaxReportBytes bounds an uploaded report (DefaultMaxReportBytes).
	MaxReportBytes int64
	// UploadIdleTimeout is how long an upload's body may send nothing
	// before 408 (ONCELEDGER_UPLOAD_IDLE_TIMEOUT; DefaultUploadIdleTimeout).
	UploadIdleTimeout time.Duration
	// Outbound pages the outbound business events for GET /v1/events
	// (outbound.Feed); nil = that endpoint answers 503.
	Outbound EventFeed
	// Subscriptions manages the push subscriptions (outbox.Service; admin
	// tokens); nil = those endpoints answer 503.
	Subscriptions SubscriptionAdmin
	// Balances records balance assertions, opening balances and
	// adjustments (operations.Balances; admin tokens); BalanceQuery reads
	// the assertions (readmodel.Store). nil = those answer 503.
	Balances     BalanceActions
	BalanceQuery BalanceQuery
	// BankStatements imports bank statement files (POST
	// /v1/bank-statements; bankimport); nil = it answers 503.
	BankStatements BankImporter
	// ProviderDays reads the day's close per provider (readmodel.Store).
	ProviderDays ProviderDayQuery
	// WriterTokens may read and register and cancel expected payments
	// (ONCELEDGER_WRITER_TOKENS), nothing else; ignored when Tokens is set.
	WriterTokens []string
	// Expected registers and cancels expected payments
	// (operations.Expectations); ExpectedQuery lists them
	// (readmodel.Store). nil = those endpoints answer 503.
	Expected      ExpectedActions
	ExpectedQuery ExpectedQuery
}

// DefaultProviderConcurrency is the per-provider cap on webhooks being
// recorded at once. It must leave room for group commit: a shared unit of
// up to ONCELEDGER_INGEST_BATCH deliveries, two units in flight, and the
// arrivals gathering behind them. Measured (docs/benchmarks.md, open loop on 2
// cores): with 64, 1,500/s offered already met 503s and the providers'
// retries turned them into a storm (p99 4.5 s at 2,000/s); with 256, no 5xx
// up to 2,500/s, p99 25 ms at 1,500/s. The body is read and verified before
// a slot is taken, so a slot is only ever held by a signed delivery.
const DefaultProviderConcurrency = 256

type server struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	limiter *limiter
}

// NewHandler returns the HTTP handler with every route of docs/reference.md.
func NewHandler(cfg Config) http.Handler {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.IngestTimeout <= 0 {
		cfg.IngestTimeout = 10 * time.Second
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = 10 * time.Second
	}
	if cfg.ProviderConcurrency == 0 {
		cfg.ProviderConcurrency = DefaultProviderConcurrency
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.PublicURL == nil {
		cfg.PublicURL = func(r *http.Request) string {
			scheme := "http"
			if r.TLS != nil {
				scheme = "https"
			}
			return scheme + "://" + r.Host + r.URL.RequestURI()
		}
	}
	s := &server{
		cfg:     cfg,
		log:     cfg.Logger,
		metrics: newMetrics(cfg.Registry),
		limiter: newLimiter(cfg.ProviderConcurrency),
	}
	r := mux.NewRouter()
	// Ids may hold '/' and ".." (an Alipay withdrawal id in a payout):
	// cleaning the decoded path redirected /payouts/alipay/a%2F..%2Fb to
	// /payouts/alipay/b, so such an id could never be opened (issue 33).
	// Routes match exact paths, so an uncleaned one only finds nothing.
	r.SkipClean(true)
	r.Use(s.withRequestID, s.recoverPanics)
	r.HandleFunc("/webhooks/{provider}", s.webhook).Methods(http.MethodPost)
	// Circle checks a subscription endpoint with HEAD before it delivers.
	r.HandleFunc("/webhooks/{provider}", s.webhookHead).Methods(http.MethodHead)
	r.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}).Methods(http.MethodGet)
	r.HandleFunc("/readyz", s.readyz).Methods(http.MethodGet)
	if cfg.Monitor != nil {
		cfg.Registry.MustRegister(cfg.Monitor)
	}
	var metricsHandler http.Handler = promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{})
	if cfg.MetricsToken != "" {
		metricsHandler = newBearerAuth([]string{cfg.MetricsToken}).middleware(metricsHandler)
	}
	r.Handle("/metrics", metricsHandler).Methods(http.MethodGet)
	s.registerQuery(r)
	r.HandleFunc("/openapi.json", serveOpenAPI).Methods(http.MethodGet)
	if cfg.Routes != nil {
		cfg.Routes(r)
	}
	r.NotFoundHandler = s.withRequestID(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fail(w, errNotFound)
	}))
	r.MethodNotAllowedHandler = s.withRequestID(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		allow := "GET"
		if strings.HasPrefix(req.URL.Path, "/webhooks/") {
			allow = "POST, HEAD"
		}
		w.Header().Set("Allow", allow)
		fail(w, errMethodNotAllowed)
	}))
	return r
}

func (s *server) webhookHead(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.cfg.Providers[mux.Vars(r)["provider"]]; !ok {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// readyz answers from the monitor's last reading: a probe runs no query.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Monitor != nil {
		if err := s.cfg.Monitor.ready(); err != nil {
			// Unauthenticated: say which dependency, not its address or user.
			s.log.Warn("not ready", "error", err, "request_id", requestID(r.Context()))
			var nr *NotReady
			reason := "not ready"
			if errors.As(err, &nr) {
				reason = nr.Component + " not ready"
			}
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "error": reason})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// NotReady names the dependency that is not ready ("database",
// "migrations", "event store"); MonitorConfig.Ready returns it so /readyz can say
// which without exposing connection details to unauthenticated callers.
type NotReady struct {
	Component string
	Err       error
}

func (e *NotReady) Error() string { return e.Component + ": " + e.Err.Error() }
func (e *NotReady) Unwrap() error { return e.Err }

type ctxKey int

const requestIDKey ctxKey = 1

// withRequestID tags each request with an id (the caller's X-Request-Id when
// sane, else a random one) for the logs and the response.
func (s *server) withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if id == "" || len(id) > 128 {
			var b [8]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey, id)))
	})
}

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// recoverPanics turns a bug into a 503 (the provider retries) instead of a
// dropped connection, and logs it loudly.
func (s *server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic in handler", "path", r.URL.Path, "panic", v, "request_id", requestID(r.Context()))
				fail(w, errors.New("internal error"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// limiter caps in-flight requests per provider without queueing: waiting
// would only hold a connection the provider is about to time out.
type limiter struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

func newLimiter(max int) *limiter { return &limiter{max: max, n: map[string]int{}} }

func (l *limiter) acquire(key string) (release func(), err error) {
	if l.max < 0 {
		return func() {}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[key] >= l.max {
		return nil, errOverloaded
	}
	l.n[key]++
	return func() {
		l.mu.Lock()
		l.n[key]--
		l.mu.Unlock()
	}, nil
}

// writeJSON writes v as the whole body, without the trailing newline
// json.Encoder would add: the body is exactly the JSON value.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"could not encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// fail answers err with the status statusFor gives it.
func fail(w http.ResponseWriter, err error) {
	writeError(w, statusFor(err), err)
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}

// tokenAuth is the /v1 token check of the configured tokens. A token list
// that cannot be read refuses everyone (serve refuses to start with one:
// see access.New).
func (s *server) tokenAuth() *tokenAuth {
	if s.cfg.Tokens != nil {
		return &tokenAuth{tokens: s.cfg.Tokens}
	}
	t, err := access.NewWithWriters(s.cfg.APITokens, s.cfg.WriterTokens, s.cfg.AdminTokens)
	if err != nil {
		s.log.Error("API tokens refused: /v1 answers 401 to everyone", "error", err)
	}
	return &tokenAuth{tokens: t, err: err}
}
