package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/providers/alipay/alipayapi"
	"github.com/onceledger/onceledger/adapters/providers/registry"
	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
	"github.com/onceledger/onceledger/adapters/providers/stripe/stripeapi"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay/wechatpayapi"
	"github.com/onceledger/onceledger/adapters/reportimport"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
	"github.com/onceledger/onceledger/domain/money"
)

// settleCmd: `onceledger settle import|sync` (docs/reference.md).
type settleCmd struct {
	Import settleImportCmd `cmd:"" help:"Import settlement / payout reports; a file with an error imports nothing (exit 1, naming line and column)."`
	Sync   settleSyncCmd   `cmd:"" help:"Pull settlement lines from a provider's API and import them like a report."`

	UnsettledAfter time.Duration `name:"unsettled-after" env:"ONCELEDGER_UNSETTLED_AFTER" default:"168h" help:"A capture with no settlement line this long before a report's latest line opens 'unsettled'."`
}

type settleImportCmd struct {
	Provider string   `name:"provider" required:"" help:"Whose report the files are."`
	Files    []string `arg:"" type:"existingfile" help:"Report files, as the provider publishes them."`
}

// Validate refuses a provider without a report importer (the provider
// registry's list), in the words kong uses for an enum.
func (c *settleImportCmd) Validate() error {
	names := registry.ReportNames()
	if slices.Contains(names, c.Provider) {
		return nil
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	return fmt.Errorf("--provider must be one of %s but got %q", strings.Join(quoted, ","), c.Provider)
}

type settleSyncCmd struct {
	Stripe    settleSyncStripeCmd    `cmd:"" help:"Pull Stripe balance transactions by payout (GET /v1/payouts, /v1/balance_transactions)."`
	Alipay    settleSyncAlipayCmd    `cmd:"" help:"Download the day's Alipay trade and account bills (alipay.data.dataservice.bill.downloadurl.query) and import them."`
	Wechatpay settleSyncWechatpayCmd `cmd:"" help:"Download the day's WeChat Pay trade and fund-flow bills (GET /v3/bill/tradebill, /v3/bill/fundflowbill) and import them."`
}

// settleSyncAlipayCmd: the answers are verified with the notifications'
// keys, and the app id defaults to the one accepted app id.
type settleSyncAlipayCmd struct {
	alipayapi.Config
	PublicKeys []string `name:"alipay-public-keys" env:"ONCELEDGER_ALIPAY_PUBLIC_KEYS" sep:"," help:"PEM files of Alipay's public keys, which sign the API's answers as they sign notifications."`
	AppIDs     []string `name:"alipay-app-ids" env:"ONCELEDGER_ALIPAY_APP_IDS" sep:"," help:"The accepted app_ids; with one, it is the app calling the API."`
	Date       string   `name:"date" help:"The bills' day (YYYY-MM-DD, Beijing time); default: yesterday."`
}

// settleSyncWechatpayCmd: the answers are verified with the
// notifications' keys, and the merchant id defaults to the one accepted.
type settleSyncWechatpayCmd struct {
	wechatpayapi.Config
	Keys   []string `name:"wechatpay-keys" env:"ONCELEDGER_WECHATPAY_KEYS" sep:"," help:"SERIAL=FILE entries: the platform certificates or public keys that sign the API's answers as they sign notifications."`
	MchIDs []string `name:"wechatpay-mchids" env:"ONCELEDGER_WECHATPAY_MCHIDS" sep:"," help:"The accepted merchant ids; with one, it is the merchant calling the API."`
	Date   string   `name:"date" help:"The bills' day (YYYY-MM-DD, Beijing time); default: yesterday."`
}

type settleSyncStripeCmd struct {
	stripeapi.Config
	Payout string `name:"payout" help:"Only this payout (po_…)."`
	Since  string `name:"since" help:"Payouts created at or after this time (RFC 3339 or YYYY-MM-DD); default: the last 30 days."`
}

// openCore builds the app's core (ingest service, read models, importer):
// no web, no monitor.
func openCore(g *globals, unsettledAfter time.Duration) (*app.Core, error) {
	return app.NewCore(g.ctx, app.Config{DatabaseURL: g.cli.DatabaseURL, EventStore: g.cli.EventStore, BankArrivalDays: g.cli.BankArrivalDays,
		UnsettledAfter: unsettledAfter, Logger: g.log})
}

func (c *settleImportCmd) Run(g *globals, parent *settleCmd) error {
	return c.run(g, parent.UnsettledAfter, os.Stdout, os.Stderr)
}

func (c *settleImportCmd) run(g *globals, after time.Duration, out io.Writer, term *os.File) error {
	importGC()
	a, err := openCore(g, after)
	if err != nil {
		return err
	}
	defer a.Close()
	im := a.Importer()
	var total reportimport.Summary
	for _, name := range c.Files {
		name = shownPath(name)
		bar := newLineBar(term, name)
		im.Progress = bar.set
		sum, err := im.Import(g.ctx, c.Provider, func() (io.ReadCloser, error) { return os.Open(name) }, report.Options{})
		bar.finish()
		if err != nil {
			var pe *report.ParseError
			if errors.As(err, &pe) {
				return fmt.Errorf("%s: nothing imported: %w", name, err)
			}
			return fmt.Errorf("%s: %w (lines recorded so far stay recorded; importing the file again completes it)", name, err)
		}
		printSummary(out, name, sum)
		total = addSummary(total, sum)
	}
	if len(c.Files) > 1 {
		printSummary(out, "total", total)
	}
	return nil
}

// shownPath is a file name as the user typed it: kong makes existing files
// absolute; relative to the working directory reads better.
func shownPath(name string) string {
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, name); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return name
}

func addSummary(a, b reportimport.Summary) reportimport.Summary {
	return reportimport.Summary{Lines: a.Lines + b.Lines, New: a.New + b.New, Duplicates: a.Duplicates + b.Duplicates,
		Conflicts: a.Conflicts + b.Conflicts, Appended: a.Appended + b.Appended, Unsettled: a.Unsettled + b.Unsettled}
}

func printSummary(w io.Writer, what string, s reportimport.Summary) {
	fmt.Fprintf(w, "%s: %d lines read, %d new (%d facts recorded), %d duplicates, %d conflicts",
		what, s.Lines, s.New, s.Appended, s.Duplicates, s.Conflicts)
	if s.Unsettled > 0 {
		fmt.Fprintf(w, "; unsettled opened for %d payments", s.Unsettled)
	}
	fmt.Fprintln(w)
}

func (c *settleSyncStripeCmd) Run(g *globals, parent *settleCmd) error {
	since, err := parseSince(c.Since, time.Now().AddDate(0, 0, -30))
	if err != nil {
		return err
	}
	client, err := c.Client()
	if err != nil {
		return err
	}
	a, err := openCore(g, parent.UnsettledAfter)
	if err != nil {
		return err
	}
	defer a.Close()
	im := a.Importer()
	bar := newLineBar(os.Stderr, "stripe balance transactions")
	im.Progress = bar.set
	sum, err := im.Record(g.ctx, "stripe", func(fn report.Func) error {
		return client.SyncPayouts(g.ctx, c.Payout, since, fn)
	})
	bar.finish()
	if err != nil {
		return fmt.Errorf("sync stripe: %w", err)
	}
	printSummary(os.Stdout, "stripe", sum)
	// Stripe's balance now, as a balance assertion (issue 35).
	bs, err := client.Balance(g.ctx, time.Now())
	if err == nil {
		_, err = im.StateBalances(g.ctx, "stripe", bs)
	}
	if err != nil {
		return fmt.Errorf("sync stripe: balance: %w", err)
	}
	for _, b := range bs {
		fmt.Fprintf(os.Stdout, "stripe balance %s: %s stated as of %s\n", b.Currency, money.FormatMinor(b.Amount, b.Currency),
			b.AsOf.Format(time.RFC3339))
	}
	return nil
}

func (c *settleSyncAlipayCmd) Run(g *globals, parent *settleCmd) error {
	return c.run(g, parent.UnsettledAfter, os.Stdout, os.Stderr)
}

func (c *settleSyncAlipayCmd) run(g *globals, after time.Duration, out io.Writer, term *os.File) error {
	date, err := billDate(c.Date)
	if err != nil {
		return err
	}
	client, err := c.Client(c.PublicKeys, c.AppIDs)
	if err != nil {
		return err
	}
	return syncBills(g, after, "alipay", date, out, term, func(dir string) ([]downloadedBill, error) {
		bills, err := client.Bills(g.ctx, date, dir)
		var out []downloadedBill
		for _, b := range bills {
			out = append(out, downloadedBill{name: "alipay " + b.Type + " bill " + date, path: b.Path})
		}
		return out, err
	})
}

func (c *settleSyncWechatpayCmd) Run(g *globals, parent *settleCmd) error {
	return c.run(g, parent.UnsettledAfter, os.Stdout, os.Stderr)
}

func (c *settleSyncWechatpayCmd) run(g *globals, after time.Duration, out io.Writer, term *os.File) error {
	date, err := billDate(c.Date)
	if err != nil {
		return err
	}
	client, err := c.Client(c.Keys, c.MchIDs)
	if err != nil {
		return err
	}
	return syncBills(g, after, "wechatpay", date, out, term, func(dir string) ([]downloadedBill, error) {
		bills, err := client.Bills(g.ctx, date, dir)
		var out []downloadedBill
		for _, b := range bills {
			out = append(out, downloadedBill{name: "wechatpay " + b.Kind + " " + date, path: b.Path})
		}
		return out, err
	})
}

// billDate is --date, or yesterday in Beijing time (the bills of a day are
// generated the next morning).
func billDate(s string) (string, error) {
	beijing := time.FixedZone("CST", 8*3600)
	if s == "" {
		return time.Now().In(beijing).AddDate(0, 0, -1).Format(time.DateOnly), nil
	}
	if _, err := time.ParseInLocation(time.DateOnly, s, beijing); err != nil {
		return "", fmt.Errorf("--date %q: want YYYY-MM-DD", s)
	}
	return s, nil
}

// downloadedBill is a bill a sync downloaded, and what to call it.
type downloadedBill struct{ name, path string }

// syncBills downloads a day's bills into a temporary directory and imports
// them as `settle import` imports files, once every file is downloaded and
// valid: a refused download or file imports nothing.
func syncBills(g *globals, after time.Duration, provider, date string, out io.Writer, term *os.File,
	download func(dir string) ([]downloadedBill, error)) error {
	dir, err := os.MkdirTemp("", "onceledger-"+provider+"-bills-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bills, err := download(dir)
	if err != nil {
		return fmt.Errorf("sync %s %s: nothing imported: %w", provider, date, err)
	}
	a, err := openCore(g, after)
	if err != nil {
		return err
	}
	defer a.Close()
	im := a.Importer()
	for _, b := range bills {
		f, err := os.Open(b.path)
		if err != nil {
			return err
		}
		_, err = im.Validate(provider, f, report.Options{})
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("%s: nothing imported: %w", b.name, err)
		}
	}
	for _, b := range bills {
		bar := newLineBar(term, b.name)
		im.Progress = bar.set
		sum, err := im.Import(g.ctx, provider, func() (io.ReadCloser, error) { return os.Open(b.path) }, report.Options{})
		bar.finish()
		if err != nil {
			return fmt.Errorf("%s: %w (lines recorded so far stay recorded; syncing again completes it)", b.name, err)
		}
		printSummary(out, b.name, sum)
	}
	return nil
}

// backfillCmd: `onceledger backfill stripe --since T`.
type backfillCmd struct {
	Stripe backfillStripeCmd `cmd:"" help:"Pull Stripe events (GET /v1/events) and ingest each as its webhook (dedup key: the event id)."`
}

type backfillStripeCmd struct {
	stripeapi.Config
	Since string `name:"since" required:"" help:"Events created at or after this time (RFC 3339 or YYYY-MM-DD)."`
}

func (c *backfillStripeCmd) Run(g *globals) error {
	since, err := parseSince(c.Since, time.Time{})
	if err != nil {
		return err
	}
	client, err := c.Client()
	if err != nil {
		return err
	}
	a, err := openCore(g, 0)
	if err != nil {
		return err
	}
	defer a.Close()
	sum, err := Backfill(g.ctx, a.Service(), client, since)
	fmt.Printf("stripe events: %d read, %d new, %d duplicates, %d ignored\n", sum.Read, sum.New, sum.Duplicates, sum.Ignored)
	return err
}

// BackfillSummary counts what a backfill did.
type BackfillSummary struct{ Read, New, Duplicates, Ignored int }

// Backfill ingests every Stripe event created at or after since through
// svc, normalized as its webhook would be (stripe.NormalizeEvent): the same
// dedup key (the event id) and the same facts, so that an event already
// delivered by its webhook is a plain duplicate.
func Backfill(ctx context.Context, svc *ingest.Service, client *stripeapi.Client, since time.Time) (BackfillSummary, error) {
	var sum BackfillSummary
	err := client.Events(ctx, since, func(id string, raw []byte) error {
		sum.Read++
		evs, err := stripe.NormalizeEvent(raw)
		if err != nil {
			return fmt.Errorf("event %s: %w", id, err)
		}
		for _, ev := range evs {
			res, err := svc.Ingest(ctx, ev)
			if err != nil {
				return fmt.Errorf("event %s: %w", id, err)
			}
			switch res.Outcome {
			case ingest.Duplicate:
				sum.Duplicates++
			case ingest.Ignored:
				sum.Ignored++
			default:
				sum.New++
			}
		}
		return nil
	})
	return sum, err
}

// parseSince reads --since: RFC 3339, or a date (midnight UTC); "" is def.
func parseSince(s string, def time.Time) (time.Time, error) {
	if s == "" {
		return def, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--since %q: want RFC 3339 or YYYY-MM-DD", s)
	}
	return t, nil
}

// lineBar is the import's progress bar on a terminal (nothing elsewhere).
type lineBar struct {
	bar  *progressbar.ProgressBar
	last atomic.Int64
}

func newLineBar(w *os.File, what string) *lineBar {
	b := &lineBar{}
	if w != nil && term.IsTerminal(int(w.Fd())) {
		b.bar = progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(what),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("lines"),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}
	return b
}

func (b *lineBar) set(n int) {
	if b.bar == nil {
		return
	}
	// Workers report concurrently: the bar only moves forward.
	for {
		last := b.last.Load()
		if int64(n) <= last || b.last.CompareAndSwap(last, int64(n)) {
			break
		}
	}
	_ = b.bar.Set64(b.last.Load())
}

func (b *lineBar) finish() {
	if b.bar != nil {
		_ = b.bar.Finish()
	}
}

// importGC trades memory for CPU in the import command: the garbage of a
// report line (parsed fields, encoded facts, query arguments) dies with its
// set, and at the default GOGC=100 the collector took a quarter of the
// process's CPU on a 1,000,000-line import; at 400 it takes a fraction of
// that and peak RSS stays near 120 MiB (bench/run.sh settle). The soft
// memory limit keeps the import inside the 256 MiB budget whatever the
// report. GOGC/GOMEMLIMIT in the environment win.
func importGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(200 << 20)
	}
}
