package main

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/alecthomas/kong"

	"github.com/onceledger/onceledger/adapters/jetstream"
	"github.com/onceledger/onceledger/adapters/outbox"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/paypalipn"
	"github.com/onceledger/onceledger/adapters/providers/registry"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
)

type serveCmd struct {
	Addr                string        `name:"addr" env:"ONCELEDGER_ADDR" default:":8080" group:"Server" help:"Listen address."`
	APITokens           []string      `name:"api-tokens" env:"ONCELEDGER_API_TOKENS" sep:"," group:"Query API tokens" help:"Read tokens for /v1 and the console; name=token entries name the actor; none (and no admin token) = /v1 answers 401."`
	AdminTokens         []string      `name:"admin-tokens" env:"ONCELEDGER_ADMIN_TOKENS" sep:"," group:"Query API tokens" help:"Tokens that may also act (settlement uploads, resolve, redrive, erase, period close); name=token entries name the actor."`
	WriterTokens        []string      `name:"writer-tokens" env:"ONCELEDGER_WRITER_TOKENS" sep:"," group:"Query API tokens" help:"Tokens of the merchant's order service: they may read, and register and cancel expected payments, nothing else; name=token entries name the actor."`
	QueryAfter          time.Duration `name:"query-after" env:"ONCELEDGER_QUERY_AFTER" default:"15m" group:"Tuning" help:"Ask the provider's API about an expected payment (or one left pending) with no terminal fact this long; 0 never asks."`
	QueryRate           float64       `name:"query-rate" env:"ONCELEDGER_QUERY_RATE" default:"5" group:"Tuning" help:"Questions a second this instance asks of each provider's API about expected or pending payments (its rate limit)."`
	MetricsToken        string        `name:"metrics-token" env:"ONCELEDGER_METRICS_TOKEN" group:"Query API tokens" help:"Bearer token /metrics requires; none = /metrics is open."`
	WebhookTolerance    time.Duration `name:"webhook-tolerance" env:"ONCELEDGER_WEBHOOK_TOLERANCE" default:"5m" group:"Tuning" help:"Max signature timestamp age."`
	MaxBodyBytes        int64         `name:"max-body-bytes" env:"ONCELEDGER_MAX_BODY_BYTES" default:"1048576" group:"Tuning" help:"Larger webhook bodies get 413."`
	IngestTimeout       time.Duration `name:"ingest-timeout" env:"ONCELEDGER_INGEST_TIMEOUT" default:"10s" group:"Tuning" help:"Time to record a webhook before answering 503."`
	ProviderConcurrency int           `name:"provider-concurrency" env:"ONCELEDGER_PROVIDER_CONCURRENCY" default:"256" group:"Tuning" help:"In-flight webhooks per provider before 503 + Retry-After."`
	ReadTimeout         time.Duration `name:"read-timeout" env:"ONCELEDGER_READ_TIMEOUT" default:"15s" group:"Server" help:"Time to read a whole request; a client that trickles its body is cut off."`
	MaxConnections      int           `name:"max-connections" env:"ONCELEDGER_MAX_CONNECTIONS" default:"1024" group:"Server" help:"Connections served at once; more wait to be accepted (<0 = no bound)."`
	ShutdownTimeout     time.Duration `name:"shutdown-timeout" env:"ONCELEDGER_SHUTDOWN_TIMEOUT" default:"30s" group:"Server" help:"How long to drain in-flight requests on SIGTERM."`
	Migrate             bool          `name:"migrate" env:"ONCELEDGER_MIGRATE" default:"true" negatable:"" group:"Server" help:"Create the database and apply pending migrations at start."`
	Projections         bool          `name:"projections" env:"ONCELEDGER_PROJECTIONS" default:"true" negatable:"" group:"Server" help:"Run the projectors in this process."`
	RawRetention        time.Duration `name:"raw-retention" env:"ONCELEDGER_RAW_RETENTION" default:"2160h" group:"Server" help:"Stored raw webhook bodies older than this are erased (hash, facts and events kept); 0 keeps them."`
	SweepAge            time.Duration `name:"sweep-age" env:"ONCELEDGER_SWEEP_AGE" default:"30s" group:"Tuning" help:"Inbox rows still 'received' after this long are re-driven by the sweeper (EventStoreDB's crash window; rows a migration hands back)."`
	ConsoleSecure       bool          `name:"console-secure-cookies" env:"ONCELEDGER_CONSOLE_SECURE_COOKIES" group:"Server" help:"Mark the console's session cookie Secure on plain HTTP too (behind a TLS-terminating proxy); requests over TLS always get it."`
	UnsettledAfter      time.Duration `name:"unsettled-after" env:"ONCELEDGER_UNSETTLED_AFTER" default:"168h" group:"Tuning" help:"After a settlement import, a capture with no settlement line this long before the report's latest line opens 'unsettled'."`
	PprofAddr           string        `name:"pprof-addr" env:"ONCELEDGER_PPROF_ADDR" group:"Server" help:"Serve net/http/pprof on this address (e.g. 127.0.0.1:6060); empty = off."`
	IngestBatch         int           `name:"ingest-batch" env:"ONCELEDGER_INGEST_BATCH" default:"64" group:"Tuning" help:"Most first arrivals sharing one database commit (group commit; Postgres event store); 1 = one transaction per delivery."`
	NATSURL             string        `name:"outbox-nats-url" env:"ONCELEDGER_OUTBOX_NATS_URL" group:"Outbound events" help:"Also publish every outbound business event to NATS JetStream there (nats://127.0.0.1:4222; tls:// for TLS); empty = off."`
	NATSSubject         string        `name:"outbox-nats-subject" env:"ONCELEDGER_OUTBOX_NATS_SUBJECT" default:"onceledger.events" group:"Outbound events" help:"Subject prefix: an event is published on PREFIX.<type>."`
	NATSStream          string        `name:"outbox-nats-stream" env:"ONCELEDGER_OUTBOX_NATS_STREAM" default:"ONCELEDGER" group:"Outbound events" help:"The JetStream stream created when none covers PREFIX.>."`
	NATSCreds           string        `name:"outbox-nats-creds" env:"ONCELEDGER_OUTBOX_NATS_CREDS" group:"Outbound events" help:"NATS credentials file."`
	OutboxConcurrency   int           `name:"outbox-concurrency" env:"ONCELEDGER_OUTBOX_CONCURRENCY" default:"64" group:"Outbound events" help:"POSTs one subscription endpoint has in flight at most (each on another stream)."`
	OutboxRate          float64       `name:"outbox-rate" env:"ONCELEDGER_OUTBOX_RATE" default:"1000" group:"Outbound events" help:"POSTs per second one subscription endpoint gets at most."`
	outboxFlags
	admissionFlags
	hostileFlags // serve_limits.go
	askFlags     // ask.go
	// ExitAfterBatchCommit is a crash test's failpoint (cmd/loadgen/chaos):
	// the process exits right after its Nth shared commit, before answering
	// the deliveries it holds.
	QueryLease           int `name:"test-query-lease-seconds" env:"ONCELEDGER_TEST_QUERY_LEASE_SECONDS" hidden:"" help:"Tests only: the lease (seconds) an asker holds on an expected payment while it asks (default 60)."`
	ExitAfterBatchCommit int `name:"test-exit-after-batch-commit" env:"ONCELEDGER_TEST_EXIT_AFTER_BATCH_COMMIT" hidden:"" help:"Tests only: exit (status 75) right after the Nth shared commit, before answering."`

	// Providers is every provider's configuration, from the provider
	// registry (kong.Plugins of its flag structs, in the registry's order:
	// newCLI fills it through set); providers is the same set, to build
	// from.
	Providers kong.Plugins `embed:"" group:"Providers (a provider without its secrets answers 404)"`
	providers *registry.Set
	// unknownKeys hears of webhooks naming signing keys not configured;
	// Run makes it with serve's logger before building the adapters.
	unknownKeys *app.UnknownKeys
}

// Validate is called by kong after parsing: refuse a configuration that
// cannot work before opening any connection.
func (c *serveCmd) Validate() error {
	var errs []error
	if c.WebhookTolerance <= 0 {
		errs = append(errs, fmt.Errorf("ONCELEDGER_WEBHOOK_TOLERANCE must be positive, got %v", c.WebhookTolerance))
	}
	if c.MaxBodyBytes <= 0 {
		errs = append(errs, fmt.Errorf("ONCELEDGER_MAX_BODY_BYTES must be positive, got %d", c.MaxBodyBytes))
	}
	if c.ReadTimeout <= 0 {
		errs = append(errs, fmt.Errorf("ONCELEDGER_READ_TIMEOUT must be positive, got %v", c.ReadTimeout))
	}
	if c.IngestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("ONCELEDGER_INGEST_TIMEOUT must be positive, got %v", c.IngestTimeout))
	}
	if !(c.QueryRate > 0) || math.IsInf(c.QueryRate, 1) {
		errs = append(errs, fmt.Errorf("ONCELEDGER_QUERY_RATE must be a positive number of questions a second, got %v", c.QueryRate))
	}
	if c.RawRetention < 0 {
		errs = append(errs, fmt.Errorf("ONCELEDGER_RAW_RETENTION must be 0 (keep) or positive, got %v", c.RawRetention))
	}
	if err := c.hostileFlags.validate(); err != nil {
		errs = append(errs, err)
	}
	if c.SecretsKey != "" {
		if _, err := outbox.ParseKey(c.SecretsKey); err != nil {
			errs = append(errs, err)
		}
	}
	// Half a provider configuration would start with the provider silently
	// answering 404: each provider refuses it.
	if err := c.set().Check(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// set is the provider configuration. newCLI makes it before kong reads the
// flags; a command made otherwise (a test) gets an empty one: nothing
// configured until the test sets it.
func (c *serveCmd) set() *registry.Set {
	if c.providers == nil {
		c.providers = registry.NewSet()
		c.Providers = kong.Plugins(c.providers.Flags())
	}
	return c.providers
}

// ipnVerifyURL is ONCELEDGER_PAYPAL_IPN_VERIFY_URL: the app posts held
// deliveries back there.
func (c *serveCmd) ipnVerifyURL() string {
	if ipn, ok := c.set().Config(paypalipn.Name).(*paypalipn.Config); ok {
		return ipn.VerifyURL
	}
	return ""
}

// buildProviders returns the configured provider adapters; a provider with no
// secrets is absent, so its endpoint answers 404.
func (c *serveCmd) buildProviders() (map[string]providers.Adapter, error) {
	if c.unknownKeys == nil {
		c.unknownKeys = app.NewUnknownKeys(nil)
	}
	return c.set().Adapters(providers.Settings{Tolerance: c.WebhookTolerance, UnknownKey: c.unknownKeys.Report})
}

// warnNoProvider says, when no provider is configured, that every webhook
// will answer 404 and which variables configure one (the registry's): a
// server started with a misspelt or missing secret must say so.
func warnNoProvider(log *slog.Logger, provs map[string]providers.Adapter) {
	if len(provs) > 0 {
		return
	}
	log.Warn("no provider configured: every webhook answers 404", "variables", strings.Join(registry.AllProviderVariables(), ", "))
}

// serveMemory tunes the garbage collector for serve, unless GOGC says
// otherwise: every webhook allocates its body, its decoded payload, its
// rows and its answer, and keeps none of them, while the live heap stays
// small (tens of MiB); collecting at 4x the live heap instead of 2x halves
// the collector's share of the server's CPU (about a tenth of it under
// load, measured with pprof) for a few tens of MiB more RSS.
//
// The soft memory limit (GOMEMLIMIT, unless the environment sets it) makes
// the collector work harder, instead of the heap growing, when a burst of
// hostile requests (issue 33: decompression bombs, thousands of
// connections) pushes it up; the figure leaves room under a 512 MiB
// container (docs/security.md).
func serveMemory() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(300)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(DefaultServeMemoryLimit)
	}
}

// DefaultServeMemoryLimit is serve's soft memory limit when GOMEMLIMIT is
// not set.
const DefaultServeMemoryLimit = 448 << 20

func (c *serveCmd) Run(g *globals) error {
	serveMemory()
	c.unknownKeys = app.NewUnknownKeys(g.log)
	provs, err := c.buildProviders()
	if err != nil {
		return fmt.Errorf("provider configuration: %w", err)
	}
	warnNoProvider(g.log, provs)
	cfg := c.config(g, provs)
	if cfg.Askers, err = c.askers(); err != nil { // ask.go
		return err
	}
	if cfg.ReportingZone, err = g.cli.zone(); err != nil {
		return err
	}
	if cfg.ExportAccounts, err = exportTable(g); err != nil { // export.go
		return err
	}
	a, err := app.New(g.ctx, cfg)
	if err != nil {
		return err
	}
	return a.Run(g.ctx)
}

// config is the app's configuration from the command line and environment.
func (c *serveCmd) config(g *globals, provs map[string]providers.Adapter) app.Config {
	return app.Config{
		DatabaseURL:          g.cli.DatabaseURL,
		EventStore:           g.cli.EventStore,
		Migrate:              c.Migrate,
		Projections:          c.Projections,
		Addr:                 c.Addr,
		Providers:            provs,
		APITokens:            c.APITokens,
		AdminTokens:          c.AdminTokens,
		WriterTokens:         c.WriterTokens,
		QueryAfter:           queryAfter(c.QueryAfter),
		QueryLease:           time.Duration(c.QueryLease) * time.Second,
		QueryRate:            c.QueryRate,
		MetricsToken:         c.MetricsToken,
		ConsoleSecureCookies: c.ConsoleSecure,
		MaxBodyBytes:         c.MaxBodyBytes,
		IngestTimeout:        c.IngestTimeout,
		ReadTimeout:          c.ReadTimeout,
		ShutdownTimeout:      c.ShutdownTimeout,
		ProviderConcurrency:  c.ProviderConcurrency,
		MaxConnections:       c.MaxConnections,
		Admission:            c.limits(),
		HeaderTimeout:        c.HeaderTimeout,
		IdleTimeout:          c.IdleTimeout,
		RawRetention:         c.RawRetention,
		SweepAge:             c.SweepAge,
		IngestBatch:          c.IngestBatch,
		AfterBatchCommit:     exitAfterCommit(c.ExitAfterBatchCommit),
		PostbackURL:          c.ipnVerifyURL(),
		PprofAddr:            c.PprofAddr,
		UnsettledAfter:       c.UnsettledAfter,
		BankArrivalDays:      g.cli.BankArrivalDays,
		NATS:                 jetstream.Config{URL: c.NATSURL, Subject: c.NATSSubject, Stream: c.NATSStream, Creds: c.NATSCreds},
		SecretsKey:           c.SecretsKey,
		OutboxAllowPrivate:   c.AllowPrivate,
		Outbox:               app.OutboxConfig{Options: outbox.SenderOptions{Concurrency: c.OutboxConcurrency, Rate: c.OutboxRate}},
		Logger:               g.log,
		UnknownKeys:          c.unknownKeys,
		UploadIdleTimeout:    c.UploadIdleTimeout,
	}
}

// exitAfterCommit is the failpoint of ONCELEDGER_TEST_EXIT_AFTER_BATCH_COMMIT:
// nil when n <= 0.
func exitAfterCommit(n int) func(int) {
	if n <= 0 {
		return nil
	}
	var commits atomic.Int64
	return func(members int) {
		if commits.Add(1) == int64(n) {
			fmt.Fprintf(os.Stderr, "failpoint: exiting after shared commit %d (%d deliveries), before answering\n", n, members)
			os.Exit(75)
		}
	}
}

type migrateCmd struct{}

func (migrateCmd) Run(g *globals) error {
	if err := postgres.EnsureDatabase(g.ctx, g.cli.DatabaseURL); err != nil {
		return err
	}
	applied, err := postgres.Migrate(g.ctx, g.cli.DatabaseURL)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Println("migrations: up to date")
		return nil
	}
	fmt.Printf("migrations: applied %v\n", applied)
	return nil
}

// queryAfter maps ONCELEDGER_QUERY_AFTER to app.Config.QueryAfter, whose 0
// means the default: "0" (never ask) becomes -1.
func queryAfter(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
