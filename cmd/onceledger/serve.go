package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/onceledger/onceledger/adapters/httpapi"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/adyen"
	"github.com/onceledger/onceledger/adapters/providers/circle"
	"github.com/onceledger/onceledger/adapters/providers/paypal"
	"github.com/onceledger/onceledger/adapters/providers/paypalipn"
	"github.com/onceledger/onceledger/adapters/providers/square"
	"github.com/onceledger/onceledger/adapters/providers/standard"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
	"github.com/onceledger/onceledger/projections"
)

// feedLagCap bounds how many events GET /v1/projections reads to count one
// projection's lag on a feed that cannot count (EventStoreDB).
const feedLagCap = 100_000

type serveCmd struct {
	Addr                string        `name:"addr" env:"ONCELEDGER_ADDR" default:":8080" help:"Listen address."`
	APITokens           []string      `name:"api-tokens" env:"ONCELEDGER_API_TOKENS" sep:"," help:"Bearer tokens for the /v1 query API; none = /v1 answers 401."`
	WebhookTolerance    time.Duration `name:"webhook-tolerance" env:"ONCELEDGER_WEBHOOK_TOLERANCE" default:"5m" help:"Max signature timestamp age."`
	MaxBodyBytes        int64         `name:"max-body-bytes" env:"ONCELEDGER_MAX_BODY_BYTES" default:"1048576" help:"Larger webhook bodies get 413."`
	IngestTimeout       time.Duration `name:"ingest-timeout" env:"ONCELEDGER_INGEST_TIMEOUT" default:"10s" help:"Time to record a webhook before answering 503."`
	ProviderConcurrency int           `name:"provider-concurrency" env:"ONCELEDGER_PROVIDER_CONCURRENCY" default:"64" help:"In-flight webhooks per provider before 503 + Retry-After."`
	ReadTimeout         time.Duration `name:"read-timeout" env:"ONCELEDGER_READ_TIMEOUT" default:"15s" help:"Time to read a whole request; a client that trickles its body is cut off."`
	ShutdownTimeout     time.Duration `name:"shutdown-timeout" env:"ONCELEDGER_SHUTDOWN_TIMEOUT" default:"30s" help:"How long to drain in-flight requests on SIGTERM."`
	Migrate             bool          `name:"migrate" env:"ONCELEDGER_MIGRATE" default:"true" negatable:"" help:"Create the database and apply pending migrations at start."`
	Projections         bool          `name:"projections" env:"ONCELEDGER_PROJECTIONS" default:"true" negatable:"" help:"Run the projectors in this process."`
	SweepAge            time.Duration `name:"sweep-age" env:"ONCELEDGER_SWEEP_AGE" default:"30s" help:"EventStoreDB only: inbox rows still 'received' after this long are re-driven by the sweeper."`
	PprofAddr           string        `name:"pprof-addr" env:"ONCELEDGER_PPROF_ADDR" help:"Serve net/http/pprof on this address (e.g. 127.0.0.1:6060); empty = off."`

	StripeSecrets           []string `name:"stripe-secrets" env:"ONCELEDGER_STRIPE_SECRETS" sep:"," help:"Stripe whsec_ signing secrets (several: rotation)."`
	StandardSecrets         []string `name:"standard-secrets" env:"ONCELEDGER_STANDARD_SECRETS" sep:"," help:"Standard Webhooks whsec_<base64> secrets."`
	AdyenHMACKeys           []string `name:"adyen-hmac-keys" env:"ONCELEDGER_ADYEN_HMAC_KEYS" sep:"," help:"Adyen hex HMAC keys."`
	PaypalWebhookID         string   `name:"paypal-webhook-id" env:"ONCELEDGER_PAYPAL_WEBHOOK_ID" help:"PayPal webhook id."`
	PaypalCertFiles         []string `name:"paypal-cert-files" env:"ONCELEDGER_PAYPAL_CERT_FILES" sep:"," help:"PEM files of trusted PayPal signing certificates."`
	SquareSignatureKeys     []string `name:"square-signature-keys" env:"ONCELEDGER_SQUARE_SIGNATURE_KEYS" sep:"," help:"Square signature keys."`
	SquareNotificationURL   string   `name:"square-notification-url" env:"ONCELEDGER_SQUARE_NOTIFICATION_URL" help:"The exact notification URL subscribed at Square."`
	CirclePublicKeys        []string `name:"circle-public-keys" env:"ONCELEDGER_CIRCLE_PUBLIC_KEYS" sep:"," help:"Circle KEY_ID=base64 SPKI ECDSA public keys."`
	PaypalIPNVerifyURL      string   `name:"paypal-ipn-verify-url" env:"ONCELEDGER_PAYPAL_IPN_VERIFY_URL" default:"https://ipnpb.paypal.com/cgi-bin/webscr" help:"Where IPN messages are posted back for verification."`
	PaypalIPNReceiverEmails []string `name:"paypal-ipn-receiver-emails" env:"ONCELEDGER_PAYPAL_IPN_RECEIVER_EMAILS" sep:"," help:"Receiver emails the IPN listener accepts; none = paypal-ipn not configured."`
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
	if len(nonEmpty(c.SquareSignatureKeys)) > 0 && c.SquareNotificationURL == "" {
		errs = append(errs, errors.New("ONCELEDGER_SQUARE_SIGNATURE_KEYS needs ONCELEDGER_SQUARE_NOTIFICATION_URL (Square signs the URL)"))
	}
	if len(nonEmpty(c.PaypalCertFiles)) > 0 && strings.TrimSpace(c.PaypalWebhookID) == "" {
		errs = append(errs, errors.New("ONCELEDGER_PAYPAL_CERT_FILES needs ONCELEDGER_PAYPAL_WEBHOOK_ID"))
	}
	// Half a provider configuration would start with the provider silently
	// answering 404: refuse it instead.
	if strings.TrimSpace(c.PaypalWebhookID) != "" && len(nonEmpty(c.PaypalCertFiles)) == 0 {
		errs = append(errs, errors.New("ONCELEDGER_PAYPAL_WEBHOOK_ID needs ONCELEDGER_PAYPAL_CERT_FILES (the trusted signing certificates)"))
	}
	if strings.TrimSpace(c.SquareNotificationURL) != "" && len(nonEmpty(c.SquareSignatureKeys)) == 0 {
		errs = append(errs, errors.New("ONCELEDGER_SQUARE_NOTIFICATION_URL needs ONCELEDGER_SQUARE_SIGNATURE_KEYS"))
	}
	return errors.Join(errs...)
}

func nonEmpty(xs []string) []string {
	var out []string
	for _, x := range xs {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// buildProviders returns the configured provider adapters; a provider with no
// secrets is absent, so its endpoint answers 404.
func (c *serveCmd) buildProviders() (map[string]providers.Adapter, error) {
	out := map[string]providers.Adapter{}
	add := func(a providers.Adapter, err error) error {
		if err != nil {
			return err
		}
		out[a.Name()] = a
		return nil
	}
	if s := nonEmpty(c.StripeSecrets); len(s) > 0 {
		if err := add(stripe.New(s, c.WebhookTolerance)); err != nil {
			return nil, err
		}
	}
	if s := nonEmpty(c.StandardSecrets); len(s) > 0 {
		if err := add(standard.New(s, c.WebhookTolerance)); err != nil {
			return nil, err
		}
	}
	if k := nonEmpty(c.AdyenHMACKeys); len(k) > 0 {
		if err := add(adyen.New(k)); err != nil {
			return nil, err
		}
	}
	if files := nonEmpty(c.PaypalCertFiles); len(files) > 0 {
		var pems [][]byte
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("ONCELEDGER_PAYPAL_CERT_FILES: %w", err)
			}
			pems = append(pems, b)
		}
		if err := add(paypal.New(c.PaypalWebhookID, pems, c.WebhookTolerance)); err != nil {
			return nil, err
		}
	}
	if k := nonEmpty(c.SquareSignatureKeys); len(k) > 0 {
		if err := add(square.New(k, c.SquareNotificationURL)); err != nil {
			return nil, err
		}
	}
	if k := nonEmpty(c.CirclePublicKeys); len(k) > 0 {
		keys := map[string]string{}
		for _, kv := range k {
			id, key, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("ONCELEDGER_CIRCLE_PUBLIC_KEYS: %q is not KEY_ID=base64", kv)
			}
			keys[strings.TrimSpace(id)] = key
		}
		if err := add(circle.New(keys)); err != nil {
			return nil, err
		}
	}
	if e := nonEmpty(c.PaypalIPNReceiverEmails); len(e) > 0 {
		if err := add(paypalipn.New(e)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ipnPostback adapts the PayPal IPN verifier to the inbox worker's port.
type ipnPostback struct{ v paypalipn.Verifier }

func (p ipnPostback) Verify(ctx context.Context, raw []byte) (bool, error) {
	verdict, err := p.v.Verify(ctx, raw)
	if err != nil {
		return false, err
	}
	return verdict == paypalipn.Verified, nil
}

func (c *serveCmd) Run(g *globals) error {
	ctx, log := g.ctx, g.log
	provs, err := c.buildProviders()
	if err != nil {
		return fmt.Errorf("provider configuration: %w", err)
	}
	if c.Migrate {
		if err := migrateDatabase(ctx, g.cli.DatabaseURL, log); err != nil {
			return err
		}
	}
	pool, err := openPool(ctx, g.cli.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	// The projectors' own pool: its marked connections never write events,
	// so the feed horizon passes their transactions (a rebuild's included).
	rmPool, err := postgres.NewReadModelPool(ctx, pool)
	if err != nil {
		return err
	}
	defer rmPool.Close()
	store, closeStore, isPostgres, err := openEventStore(ctx, g.cli.EventStore, pool)
	if err != nil {
		return err
	}
	defer func() { _ = closeStore() }()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	retries := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "onceledger_append_retries_total",
		Help: "Appends retried after losing the race for a stream (wrong expected version).",
	}, []string{"provider"})
	reg.MustRegister(retries, postgres.NewStatsCollector(pool, store.Head))

	// The recorder: one transaction when the events live in Postgres; inbox
	// then append (with a sweeper for the window between) otherwise.
	inbox := postgres.NewInbox(pool)
	var (
		recorder ingest.Recorder
		redriver ingest.Redriver
		workers  []*ingest.Worker
	)
	if isPostgres {
		pgRecorder := postgres.NewRecorder(pool, store.(*postgres.EventStore))
		recorder, redriver = pgRecorder, pgRecorder
	} else {
		twoPhase := ingest.NewTwoPhaseRecorder(inbox, store, ingest.Options{})
		recorder, redriver = twoPhase, twoPhase
		workers = append(workers, &ingest.Worker{
			Name: "sweeper", Inbox: inbox, Redriver: twoPhase, Decider: ingest.PaymentDecider{},
			Status: ingest.StatusReceived, OlderThan: c.SweepAge, Lease: time.Minute,
			Interval: 5 * time.Second, Log: log,
		})
	}
	svc := ingest.New(recorder, ingest.PaymentDecider{}, ingest.Options{
		OnRetry: func(p string) { retries.WithLabelValues(p).Inc() },
	})
	var holder httpapi.Holder
	if _, ok := provs[paypalipn.Name]; ok {
		holder = inbox
		workers = append(workers, &ingest.Worker{
			Name: "paypal-ipn-verifier", Inbox: inbox, Redriver: redriver, Decider: ingest.PaymentDecider{},
			Provider: paypalipn.Name, Status: ingest.StatusUnverified,
			Postback: ipnPostback{paypalipn.Verifier{URL: c.PaypalIPNVerifyURL}},
			Lease:    time.Minute, Interval: 2 * time.Second, Log: log,
		})
	}

	// The read model counts lag on the Postgres events table; for any other
	// event store, count the feed itself (capped: it has no count).
	var lag httpapi.LagFunc
	if !isPostgres {
		lag = httpapi.FeedLag(store, feedLagCap)
	}
	handler := httpapi.NewHandler(httpapi.Config{
		Providers:           provs,
		Ingester:            svc,
		Holder:              holder,
		APITokens:           c.APITokens,
		Query:               postgres.NewQuery(pool),
		Events:              store,
		Lag:                 lag,
		MaxBodyBytes:        c.MaxBodyBytes,
		IngestTimeout:       c.IngestTimeout,
		ProviderConcurrency: c.ProviderConcurrency,
		Logger:              log,
		Registry:            reg,
		Ready: func(ctx context.Context) error {
			if err := pool.Ping(ctx); err != nil {
				return &httpapi.NotReady{Component: "database", Err: err}
			}
			ok, err := postgres.MigrationsApplied(ctx, pool)
			if err != nil {
				return &httpapi.NotReady{Component: "migrations", Err: err}
			}
			if !ok {
				return &httpapi.NotReady{Component: "migrations", Err: errors.New("migrations pending")}
			}
			if _, err := store.Head(ctx); err != nil {
				return &httpapi.NotReady{Component: "event store", Err: err}
			}
			return nil
		},
	})

	srv := &http.Server{
		Addr:              c.Addr,
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       c.ReadTimeout,
		WriteTimeout:      c.IngestTimeout + 15*time.Second,
		IdleTimeout:       120 * time.Second,
	}

	// Background work stops only after the HTTP server has drained, so a
	// request in flight still finds its dependencies.
	bgCtx, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBackground()
	var wg sync.WaitGroup
	if c.PprofAddr != "" {
		startPprof(bgCtx, &wg, c.PprofAddr, log)
	}
	if c.Projections {
		projs := projections.NewService(store, readmodel.New(rmPool), log)
		wg.Go(func() {
			if err := projs.Run(bgCtx); err != nil {
				log.Error("projections stopped", "error", err)
			}
		})
	}
	for _, w := range workers {
		wg.Go(func() { _ = w.Run(bgCtx) })
	}
	names := make([]string, 0, len(provs))
	for n := range provs {
		names = append(names, n)
	}
	log.Info("serving", "addr", c.Addr, "providers", names, "event_store", redactSetting(g.cli.EventStore),
		"projections", c.Projections)

	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		return fmt.Errorf("listen %s: %w", c.Addr, err)
	case <-ctx.Done():
	}
	log.Info("shutting down: draining in-flight requests", "timeout", c.ShutdownTimeout)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.ShutdownTimeout)
	defer cancel()
	shutdownErr := srv.Shutdown(shutdownCtx)
	stopBackground()
	wg.Wait()
	if shutdownErr != nil {
		return fmt.Errorf("graceful shutdown: %w", shutdownErr)
	}
	log.Info("stopped")
	return nil
}

func migrateDatabase(ctx context.Context, url string, log interface{ Info(string, ...any) }) error {
	if err := postgres.EnsureDatabase(ctx, url); err != nil {
		return err
	}
	applied, err := postgres.Migrate(ctx, url)
	if err != nil {
		return err
	}
	log.Info("migrations applied", "count", len(applied))
	return nil
}

func openPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("ONCELEDGER_DATABASE_URL: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return pool, nil
}

func startPprof(ctx context.Context, wg *sync.WaitGroup, addr string, log interface{ Info(string, ...any) }) {
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
