// Command onceledger is the payment ledger's single binary: the webhook and
// query server, migrations, projection rebuilds, status, verification and
// stream inspection. main is the only place that reads the environment: every
// flag has an ONCELEDGER_* twin, documented in docs/reference.md. The
// providers' flags come from the provider registry
// (adapters/providers/registry).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"
	_ "time/tzdata" // ONCELEDGER_REPORTING_TZ without system zone data

	"github.com/alecthomas/kong"
)

// cli is the configuration: flags with environment twins and defaults.
// kong reads it once at start; validate() checks what kong cannot.
type cli struct {
	DatabaseURL string `name:"database-url" env:"ONCELEDGER_DATABASE_URL" default:"postgres://postgres@127.0.0.1:5432/onceledger?sslmode=disable" group:"Storage" help:"Postgres: read models, inbox and the default event store."`
	EventStore  string `name:"event-store" env:"ONCELEDGER_EVENT_STORE" default:"postgres" group:"Storage" help:"'postgres', or an esdb://host:2113?tls=false connection string for EventStoreDB / KurrentDB."`
	ReportingTZ string `name:"reporting-tz" env:"ONCELEDGER_REPORTING_TZ" default:"UTC" group:"Storage" help:"IANA time zone of accounting periods (a month is YYYY-MM in it), e.g. Europe/Berlin."`
	// BankArrivalDays decides bank statement matching wherever deliveries
	// are recorded (serve, imports, redrive): one setting for all.
	BankArrivalDays int    `name:"bank-arrival-days" env:"ONCELEDGER_BANK_ARRIVAL_DAYS" default:"5" group:"Storage" help:"Business days (Monday to Friday) after a payout's arrival date within which its bank credit must appear, else payout_not_received."`
	LogLevel        string `name:"log-level" env:"ONCELEDGER_LOG_LEVEL" default:"info" enum:"debug,info,warn,error" group:"Logging" help:"Log level."`
	LogFormat       string `name:"log-format" env:"ONCELEDGER_LOG_FORMAT" default:"text" enum:"text,json" group:"Logging" help:"Log format."`
	// CPUProfile is for the benches (bench/run.sh settle): where a
	// command's time goes, without a server to expose net/http/pprof.
	CPUProfile string `name:"cpu-profile" env:"ONCELEDGER_CPU_PROFILE" hidden:"" help:"Write a CPU profile of the command to this file."`

	// The account table of the exports to accountants' tools (issue 38),
	// which serve and export read.
	ExportAccounts string `name:"export-accounts" env:"ONCELEDGER_EXPORT_ACCOUNTS" type:"existingfile" group:"Exports" help:"File mapping onceledger accounts to the merchant's chart for exports (one onceledger-account=their-account a line)."`

	Serve         serveCmd         `cmd:"" help:"Run the HTTP server (webhooks, query API, health, metrics) and the projectors."`
	Migrate       migrateCmd       `cmd:"" help:"Apply pending migrations and exit."`
	Rebuild       rebuildCmd       `cmd:"" help:"Rebuild projections from history into shadow tables, compare with live, swap."`
	Project       projectCmd       `cmd:"" help:"Run only the projectors (no HTTP server) until interrupted."`
	Status        statusCmd        `cmd:"" help:"Each projection's position, the head, the lag; inbox counts by status."`
	Verify        verifyCmd        `cmd:"" help:"Check ledger invariants; non-zero exit on any violation."`
	Inspect       inspectCmd       `cmd:"" help:"Print the events of one stream, in order."`
	Sample        sampleCmd        `cmd:"" help:"Sign a sample webhook with the configured secret and send it to a running server."`
	Export        exportCmd        `cmd:"" help:"Write the journal of a date range as beancount, hledger, Xero or QuickBooks import files."`
	Period        periodCmd        `cmd:"" help:"Close or reopen an accounting period (recorded as events with the actor)."`
	Erase         eraseCmd         `cmd:"" help:"Erase stored raw webhook bodies (personal data) of one delivery or one payment; hashes, facts and events stay."`
	Redrive       redriveCmd       `cmd:"" help:"Re-normalize stored raw deliveries with the current code and record what they now carry; prints counts."`
	Query         queryCmd         `cmd:"" help:"Ask the providers' APIs now about expected or pending payments and record what they say through the webhook gate."`
	Settle        settleCmd        `cmd:"" help:"Settlement reports: import files, or sync from a provider's API."`
	Backfill      backfillCmd      `cmd:"" help:"Pull a provider's past events from its API and ingest them through the webhook gate."`
	Events        eventsCmd        `cmd:"" help:"The outbound business events: tail the feed."`
	Subscriptions subscriptionsCmd `cmd:"" help:"Push subscriptions: add, list, remove, replay."`
	Bank          bankCmd          `cmd:"" help:"Bank statements: import files into a bank account (payouts proven into the bank)."`
}

// Validate refuses an unknown reporting time zone and a bank arrival
// window out of range before any command runs, naming every bad variable.
func (c *cli) Validate() error {
	var days error
	if c.BankArrivalDays < 1 || c.BankArrivalDays > 60 {
		days = fmt.Errorf("ONCELEDGER_BANK_ARRIVAL_DAYS: %d is not a number of business days from 1 to 60", c.BankArrivalDays)
	}
	_, err := c.zone()
	return errors.Join(err, days)
}

// zone is ONCELEDGER_REPORTING_TZ as a location. The binary embeds the
// IANA database (time/tzdata), so a zone name works on a host without
// system zone data (a scratch or distroless image).
func (c *cli) zone() (*time.Location, error) {
	loc, err := time.LoadLocation(c.ReportingTZ)
	if err != nil {
		return nil, fmt.Errorf("ONCELEDGER_REPORTING_TZ: %w", err)
	}
	return loc, nil
}

// globals is what every subcommand gets.
type globals struct {
	ctx context.Context
	log *slog.Logger
	cli *cli
}

// newCLI is the configuration with every provider's flags (the provider
// registry's, through kong.Plugins): parse into it, never into a bare cli.
func newCLI() *cli {
	c := &cli{}
	c.Serve.set()
	c.Redrive.Serve.set()
	c.Query.Serve.set() // query.go: asks with serve's provider configuration
	return c
}

// parse reads the command line and the environment as main does: kong
// parses and validates, then the environment is checked for ONCELEDGER_*
// variables nothing reads (checkEnvironment). Kong itself exits on
// --help and on a usage error.
func parse(args, environ []string, opts ...kong.Option) (*cli, *kong.Context, error) {
	c := newCLI()
	parser, err := kong.New(c, append([]kong.Option{
		kong.Name("onceledger"),
		kong.Description("Event-sourced payment ledger: the provider delivers at least once; onceledger records exactly once."),
		kong.UsageOnError(),
	}, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	kctx, err := parser.Parse(args)
	parser.FatalIfErrorf(err)
	if err := checkEnvironment(kctx.Model.Node, environ); err != nil {
		return nil, nil, err
	}
	return c, kctx, nil
}

func main() {
	c, kctx, err := parse(os.Args[1:], os.Environ())
	if err != nil {
		fmt.Fprintln(os.Stderr, "onceledger:", err)
		os.Exit(1)
	}
	log := newLogger(c.LogLevel, c.LogFormat)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopProfile := func() {}
	if c.CPUProfile != "" {
		var err error
		if stopProfile, err = startCPUProfile(c.CPUProfile); err != nil {
			fmt.Fprintln(os.Stderr, "onceledger:", err)
			os.Exit(1)
		}
	}
	err = kctx.Run(&globals{ctx: ctx, log: log, cli: c})
	stopProfile() // before os.Exit, which runs no defers
	if err != nil {
		fmt.Fprintln(os.Stderr, "onceledger:", err)
		stop()
		os.Exit(exitCode(err))
	}
}

func newLogger(level, format string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lv}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}

// exitError carries a specific exit code (verification failures use 2, so
// scripts can tell "the ledger is wrong" from "could not run").
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error) int {
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return 1
}

// startCPUProfile profiles the process into path until the returned stop.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("ONCELEDGER_CPU_PROFILE: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("ONCELEDGER_CPU_PROFILE: %w", err)
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}
