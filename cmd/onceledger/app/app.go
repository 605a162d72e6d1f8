// Package app owns the wiring of onceledger. From one Config it builds the
// core (core.go: database pools, event store and the journal that records
// into it, the ingest service, its background workers, the IPN postback
// verifier, the read-model queries, the projections runtime, the acting
// services), which every command that records or acts needs, and on top of
// it the web (this file: the HTTP handler and server with /v1, the console,
// the monitor and the metrics), which only serve needs; and it runs the
// service, with the background lifecycle and the graceful shutdown.
// `onceledger serve` parses its configuration into a Config and calls New
// and Run; the end-to-end tests build the same app, so what they test is
// what runs. The other commands call NewCore.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/onceledger/onceledger/adapters/access"
	"github.com/onceledger/onceledger/adapters/admission"
	"github.com/onceledger/onceledger/adapters/expectations"
	"github.com/onceledger/onceledger/adapters/httpapi"
	"github.com/onceledger/onceledger/adapters/jetstream"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/registry"
	"github.com/onceledger/onceledger/projections/outbound"
)

// Config is everything the app is built from. Zero durations and sizes take
// the HTTP layer's defaults.
type Config struct {
	DatabaseURL string
	// EventStore is ONCELEDGER_EVENT_STORE: "postgres" (or "") or an
	// EventStoreDB / KurrentDB connection string.
	EventStore string
	// Migrate creates the database and applies pending migrations first.
	Migrate bool
	// Projections runs the projectors in this process.
	Projections bool
	// ReportingZone is ONCELEDGER_REPORTING_TZ, the time zone of accounting
	// periods: the ledger projection books in it and period close decides
	// in it (nil: UTC).
	ReportingZone *time.Location
	// ExportAccounts is the account table of GET /v1/export/{format}
	// (ONCELEDGER_EXPORT_ACCOUNTS, bookexport.LoadTable); nil: the
	// default table.
	ExportAccounts ExportTable
	// Now is the clock of the operators' actions (period close); nil:
	// time.Now.
	Now func() time.Time

	Addr      string                       // listen address of Run
	Providers map[string]providers.Adapter // configured providers only: others answer 404
	APITokens []string                     // read tokens of /v1 and the console (name=token entries allowed)
	// AdminTokens may also act (settlement uploads, resolve, redrive, erase,
	// period close); the entry's name is the actor recorded on actions.
	AdminTokens []string
	// WriterTokens (ONCELEDGER_WRITER_TOKENS) may read, and register and
	// cancel expected payments, nothing else.
	WriterTokens []string
	// QueryAfter is ONCELEDGER_QUERY_AFTER: an expected payment still
	// unpaid this long after its registration is asked about at the
	// provider's API; 0 takes the default (15m), < 0 never asks.
	QueryAfter time.Duration
	// QueryLease is how long an asker holds an expected payment while it
	// asks (0: the default, a minute; a crash test shortens it).
	QueryLease time.Duration
	// QueryRate is ONCELEDGER_QUERY_RATE: questions a second to each
	// provider (0: the default, 5).
	QueryRate float64
	// Askers ask the providers whose API credentials are configured
	// (Stripe, Alipay, WeChat Pay) about expected payments still unpaid.
	Askers map[string]expectations.Asker
	// MetricsToken, when set, is the bearer token /metrics requires.
	MetricsToken string
	// ConsoleSecureCookies marks the console's session cookie Secure even
	// on plain HTTP (behind a TLS-terminating proxy); over TLS it always is.
	ConsoleSecureCookies bool

	MaxBodyBytes        int64
	IngestTimeout       time.Duration
	ReadTimeout         time.Duration
	ShutdownTimeout     time.Duration
	ProviderConcurrency int
	// MaxConnections bounds the connections served at once (default 1024;
	// <0 = no bound). See Serve.
	MaxConnections int
	// Admission is the rest of the admission budget (adapters/admission):
	// its MaxConnections is set from MaxConnections above. HeaderTimeout
	// and IdleTimeout bound a connection that carries no request (defaults
	// DefaultHeaderTimeout and DefaultIdleTimeout).
	Admission     admission.Limits
	HeaderTimeout time.Duration
	IdleTimeout   time.Duration
	// RawRetention (ONCELEDGER_RAW_RETENTION): stored raw webhook bodies
	// older than this are erased by a background worker (hash, facts and
	// events kept); 0 keeps them. RetentionInterval is the pause between
	// its passes (default 10m).
	RawRetention      time.Duration
	RetentionInterval time.Duration
	// SweepAge: inbox rows still "received" after this long are re-driven
	// (ingest.DefaultSweepAge when 0): the two-phase journal's crash window,
	// and rows a migration hands back to the domain on any event store.
	SweepAge time.Duration
	// IngestBatch caps the first arrivals sharing one commit (group
	// commit); 1 turns it off, 0 takes the default.
	IngestBatch int
	// AfterBatchCommit, if set, runs after each shared commit, before its
	// deliveries are answered (a crash test's failpoint).
	AfterBatchCommit func(n int)

	// PostbackURL is where held deliveries (PayPal IPN) are posted back for
	// verification; PostbackClient the client doing it (nil: a default).
	PostbackURL    string
	PostbackClient *http.Client

	// UnsettledAfter is ONCELEDGER_UNSETTLED_AFTER (DefaultUnsettledAfter
	// when 0): the unsettled check after a settlement import.
	UnsettledAfter time.Duration

	// BankArrivalDays is ONCELEDGER_BANK_ARRIVAL_DAYS (5 when 0): business
	// days after a payout's arrival date within which its bank credit
	// must appear (bank.go).
	BankArrivalDays int

	// NATS is the ONCELEDGER_OUTBOX_NATS_URL, _SUBJECT, _STREAM and _CREDS variables: with a URL, serve also publishes
	// every outbound event to JetStream (docs/events.md).
	NATS jetstream.Config

	// SecretsKey is ONCELEDGER_SECRETS_KEY: the 32-byte key (hex or
	// base64) that seals push subscriptions' signing secrets at rest; a
	// malformed one refuses to start, none refuses to create a
	// subscription (and to serve once one exists).
	SecretsKey string
	// OutboxAllowPrivate is ONCELEDGER_OUTBOX_ALLOW_PRIVATE: subscription
	// endpoints may be loopback, private or link-local addresses.
	OutboxAllowPrivate bool
	// Outbox tunes the push subscriptions' sender serve runs.
	Outbox OutboxConfig
	// UploadIdleTimeout is ONCELEDGER_UPLOAD_IDLE_TIMEOUT: an upload's body
	// may send nothing this long before 408 (0: the default, 30 s).
	UploadIdleTimeout time.Duration

	PprofAddr string // serve net/http/pprof there; "" = off
	Logger    *slog.Logger
	// UnknownKeys, when set, is the counter the providers' adapters were
	// built to report unknown signing keys to (providers.Settings), which
	// /metrics exports.
	UnknownKeys *UnknownKeys
}

// App is the wired service: the core and the web on top of it.
type App struct {
	*Core
	tokens  *access.Tokens
	reads   *readSide
	handler http.Handler
	// admission is the connection and in-flight budget Serve applies.
	admission *admission.Controller
	// outbound is GET /v1/events's feed; Serve starts its one listener.
	outbound *outbound.Feed
	// querier asks the providers (expectations.go).
	querier *expectations.Querier
	closed  sync.Once
}

// New builds the app from cfg: the core (NewCore), then the web (the
// HTTP handler with /v1, the console, the monitor and the metrics). Close
// or Run releases what it opened.
func New(ctx context.Context, cfg Config) (*App, error) {
	tokens, err := access.NewWithWriters(cfg.APITokens, cfg.WriterTokens, cfg.AdminTokens)
	if err != nil {
		return nil, err
	}
	core, err := NewCore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	a := &App{Core: core, tokens: tokens}
	if err := a.web(ctx); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// web wires what serve adds to the core: the metrics registry, the read
// side's monitor (its own small pool), the console and the HTTP handler.
func (a *App) web(ctx context.Context) error {
	cfg := a.cfg
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(a.retries)
	if cfg.UnknownKeys != nil {
		reg.MustRegister(cfg.UnknownKeys.Collector())
	}

	hc := httpapi.Config{
		Providers:           cfg.Providers,
		Unconfigured:        registry.Unconfigured,
		Ingester:            a.service,
		Tokens:              a.tokens,
		MaxBodyBytes:        cfg.MaxBodyBytes,
		IngestTimeout:       cfg.IngestTimeout,
		BodyTimeout:         cfg.ReadTimeout,
		ProviderConcurrency: cfg.ProviderConcurrency,
		Logger:              a.log,
		Registry:            reg,
		MetricsToken:        cfg.MetricsToken,
	}
	var err error
	a.reads, err = openReadSide(ctx, cfg.DatabaseURL, a.pool, a.events.Store, a.events.IsPostgres)
	if err != nil {
		return err
	}
	hc.Query, hc.Events = a.reads.Query, a.events.Store
	hc.Projections, hc.Monitor = a.reads.Projections, a.reads.Monitor
	hc.Periods, hc.PeriodActions = a.reads.Query, a.Periods()
	hc.ReportingZone = cfg.ReportingZone
	hc.Export = a.exporter() // export.go
	hc.Eraser = a.Eraser()
	hc.Recon, hc.Redrive = a.recon, a.redriver
	if hc.Routes, err = a.consoleRoutes(); err != nil {
		return err
	}
	hc.SettlementQuery = a.reads.Query
	a.outbound = outbound.NewFeed(a.events.Store)
	hc.Outbound = a.outbound
	hc.Subscriptions = a.Subscriptions()          // subscriptions.go
	hc.Settlements = reportImporter{a.Importer()} // settlements.go
	hc.UploadIdleTimeout = cfg.UploadIdleTimeout
	hc.Balances, hc.BalanceQuery, hc.ProviderDays = a.Balances(), a.reads.Query, a.reads.Query
	hc.BankStatements = bankStatements{a.BankImporter()} // bank.go
	a.expectedRoutes(&hc)                                // expectations.go
	a.handler = httpapi.NewHandler(hc)
	lim := cfg.Admission
	lim.MaxConnections = cfg.MaxConnections
	if lim.MaxInFlight == 0 {
		lim.MaxInFlight = InFlightFor(cfg.IngestBatch)
	}
	a.admission = admission.New(lim, reg, a.log)
	return nil
}

// Handler is the HTTP handler: webhooks, /v1, health, metrics.
func (a *App) Handler() http.Handler { return a.handler }

// Close releases the web's monitor pool, then the core, once. Run calls
// it when it returns.
func (a *App) Close() {
	a.closed.Do(func() {
		if a.reads != nil {
			a.reads.Close()
		}
		a.Core.Close()
	})
}

// Run serves on cfg.Addr until ctx ends, with the projectors (when
// configured), the workers and pprof in the background; then it drains
// in-flight requests for up to ShutdownTimeout, stops the background work
// and closes the app.
func (a *App) Run(ctx context.Context) error {
	defer a.Close()
	l, err := net.Listen("tcp", a.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", a.cfg.Addr, err)
	}
	return a.Serve(ctx, l)
}

// DefaultMaxConnections is the default bound on connections served at once.
const DefaultMaxConnections = admission.DefaultMaxConnections

// InFlightFor is the default work in flight (ONCELEDGER_MAX_IN_FLIGHT 0)
// for an ingest batch size (ONCELEDGER_INGEST_BATCH; 0 = its default, 64):
// what group commit absorbs at once, two shared units being committed and
// two gathering behind them, so that a full server keeps its batches full
// and sheds the rest; at least 64, so that without group commit (a batch
// of 1) deliveries still commit side by side.
func InFlightFor(batch int) int {
	if batch <= 0 {
		batch = 64
	}
	return max(64, 4*batch)
}

// Defaults of the connection timeouts (ONCELEDGER_HEADER_TIMEOUT,
// ONCELEDGER_IDLE_TIMEOUT).
const (
	DefaultHeaderTimeout = 5 * time.Second
	DefaultIdleTimeout   = 60 * time.Second
)

// Serve is Run on a listener the caller opened; it closes l.
//
// Admission (adapters/admission) comes before any handler: the listener is
// bounded (every open connection costs a goroutine, buffers and a file
// descriptor), and when the bound is reached a new connection takes the
// place of one that carries no request instead of waiting behind it, so
// idle or trickling connections cannot keep probes and providers out; a
// request beyond its class's in-flight budget is answered 503/429 before
// its body is read. HeaderTimeout, the per-request body deadline
// (httpapi.Config.BodyTimeout) and IdleTimeout make sure held connections
// do close.
func (a *App) Serve(ctx context.Context, l net.Listener) error {
	c := a.cfg
	headerTimeout, idleTimeout := c.HeaderTimeout, c.IdleTimeout
	if headerTimeout <= 0 {
		headerTimeout = DefaultHeaderTimeout
	}
	if idleTimeout <= 0 {
		idleTimeout = DefaultIdleTimeout
	}
	l = a.admission.Listener(l)
	srv := &http.Server{
		Handler:           a.admission.Middleware(a.handler),
		ConnContext:       a.admission.ConnContext,
		ConnState:         a.admission.ConnState,
		ReadHeaderTimeout: headerTimeout,
		ReadTimeout:       c.ReadTimeout,
		WriteTimeout:      c.IngestTimeout + 15*time.Second,
		IdleTimeout:       idleTimeout,
	}

	// Background work stops only after the HTTP server has drained, so a
	// request in flight still finds its dependencies.
	bgCtx, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBackground()
	var wg sync.WaitGroup
	if c.PprofAddr != "" {
		startPprof(bgCtx, &wg, c.PprofAddr, a.log)
	}
	wg.Go(func() { a.reads.Monitor.Run(bgCtx) })
	if c.NATS.URL != "" {
		if err := a.startNATS(bgCtx, &wg); err != nil {
			return err
		}
	}
	if err := a.outbound.Start(bgCtx); err != nil {
		// Each long poll then listens on its own (docs/events.md).
		a.log.Warn("outbound events: no shared listener", "error", err)
	}
	if !c.Outbox.Off {
		if err := a.checkSecretsKey(ctx); err != nil {
			return err
		}
		a.startSender(bgCtx, &wg) // subscriptions.go
	}
	if c.Projections {
		projs := a.Projections()
		wg.Go(func() {
			if err := projs.Run(bgCtx); err != nil {
				a.log.Error("projections stopped", "error", err)
			}
		})
	}
	for _, w := range a.workers {
		wg.Go(func() { _ = w.Run(bgCtx) })
	}
	a.startExpectations(bgCtx, &wg) // expectations.go
	if c.RawRetention > 0 {
		wg.Go(func() { a.retain(bgCtx) })
	}
	if c.Projections { // the read model it watches is the projectors' (bank.go)
		im := a.BankImporter()
		wg.Go(func() { matchBanks(bgCtx, a.query, im.Match, bankMatchEvery, a.log) })
	}
	names := make([]string, 0, len(c.Providers))
	for n := range c.Providers {
		names = append(names, n)
	}
	a.log.Info("serving", "addr", l.Addr().String(), "providers", names, "event_store", LogSetting(c.EventStore),
		"projections", c.Projections)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		stopBackground()
		wg.Wait()
		return fmt.Errorf("serve %s: %w", l.Addr(), err)
	case <-ctx.Done():
	}
	a.log.Info("shutting down: draining in-flight requests", "timeout", c.ShutdownTimeout)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.ShutdownTimeout)
	defer cancel()
	a.outbound.Drain() // long polls answer now instead of holding the drain
	shutdownErr := srv.Shutdown(shutdownCtx)
	stopBackground()
	wg.Wait()
	if shutdownErr != nil {
		return fmt.Errorf("graceful shutdown: %w", shutdownErr)
	}
	a.log.Info("stopped")
	return nil
}

// retain erases raw bodies older than RawRetention, at start and then every
// RetentionInterval, until ctx ends. Several instances may run it at once:
// each batch locks its rows (SKIP LOCKED), so they share the work.
func (a *App) retain(ctx context.Context) {
	interval := a.cfg.RetentionInterval
	if interval <= 0 {
		interval = 10 * time.Minute
	}
	eraser := a.Eraser()
	for {
		n, err := eraser.EraseOlderThan(ctx, a.cfg.RawRetention, 1000)
		switch {
		case err != nil && ctx.Err() == nil:
			a.log.Warn("raw body retention pass failed; will retry", "error", err)
		case n.InboxRows+n.ConflictRows > 0:
			a.log.Info("raw bodies erased (retention)", "inbox_rows", n.InboxRows, "conflict_rows", n.ConflictRows,
				"retention", a.cfg.RawRetention)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

func startPprof(ctx context.Context, wg *sync.WaitGroup, addr string, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	wg.Add(1)
	go func() {
		defer wg.Done()
		log.Info("pprof listening", "addr", addr)
		_ = srv.ListenAndServe()
	}()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
}
