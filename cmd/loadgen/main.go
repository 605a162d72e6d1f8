// Command loadgen drives a running onceledger server like a fleet of payment
// providers would: signed Stripe and Standard Webhooks deliveries for
// realistic payment lifecycles, with redeliveries (some concurrent),
// refunds and disputes ahead of their capture, and conflicting
// redeliveries. It keeps its own model of the ledger those lifecycles must
// produce (package internal/model, written from docs/reference.md and sharing no
// code with the server's domain), and at the end compares it with
// GET /v1/balances, printing every difference.
//
// It also measures: deliveries per second, latency percentiles, outcome
// counts, retries, and the projections' lag while loading. bench/run.sh
// uses its --json summary.
//
//	go run ./cmd/loadgen --payments 1000 --concurrency 64 --duplicates 0.2
//
// Exit status: 0 ledger matches, 1 mismatch or a broken exactly-once
// answer, 2 could not run.
package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/onceledger/onceledger/cmd/loadgen/internal/model"
	"github.com/onceledger/onceledger/cmd/loadgen/internal/scenario"
	"github.com/onceledger/onceledger/cmd/loadgen/internal/sign"
)

type options struct {
	URL            string // comma-separated: several instances
	Token          string
	Providers      string
	StandardSecret string
	StripeSecret   string
	// Alipay and WeChat Pay: the private keys whose public halves the
	// server trusts, and the ids it accepts.
	AlipayKeyFile     string
	AlipayAppID       string
	WechatpayKeyFile  string
	WechatpaySerial   string
	WechatpayAPIv3Key string
	WechatpayMchID    string
	Payments          int
	Concurrency       int
	MaxConns          int // connections to the server at most (http.Transport.MaxConnsPerHost); 0 = unbounded
	Grace             time.Duration
	Window            int
	Rate              float64
	OpenLoop          bool
	Duplicates        float64
	Reorder           float64
	Conflicts         float64
	Duration          time.Duration
	Wait              time.Duration
	Seed              uint64
	RunID             string
	Baseline          bool
	MaxAttempts       int
	Backoff           time.Duration
	MaxBackoff        time.Duration
	Timeout           time.Duration
	LagInterval       time.Duration
	JSON              bool
	CPUProfile        string
	Procs             int
	Presign           bool
}

// firstOf returns the first non-empty element of a comma-separated env var:
// the server takes lists (for rotation), the generator signs with one.
func firstOf(env string) string {
	for _, s := range strings.Split(os.Getenv(env), ",") {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return ""
}

// firstSerial is the serial of the first SERIAL=FILE entry of
// ONCELEDGER_WECHATPAY_KEYS: the key the generator's signature must name.
func firstSerial() string {
	serial, _, _ := strings.Cut(firstOf("ONCELEDGER_WECHATPAY_KEYS"), "=")
	return strings.TrimSpace(serial)
}

// defaultURL follows the server's ONCELEDGER_ADDR (":8080" → 127.0.0.1:8080).
func defaultURL() string {
	addr := os.Getenv("ONCELEDGER_ADDR")
	if addr == "" {
		addr = ":8080"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://127.0.0.1:8080"
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

func randomSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) >> 1 // fits int64 for --seed round-trips
}

// parseFlags reads the command line; env twins provide the defaults.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.URL, "url", defaultURL(), "server base URL (default from ONCELEDGER_ADDR); several instances: comma-separated, webhook attempts go round-robin (a retry lands on the next one), /v1 reads use the first")
	fs.StringVar(&o.Token, "token", firstOf("ONCELEDGER_API_TOKENS"), "bearer token for /v1 (default: first of ONCELEDGER_API_TOKENS)")
	fs.StringVar(&o.Providers, "providers", "standard,stripe", "comma-separated providers to simulate: standard, stripe, alipay, wechatpay")
	fs.StringVar(&o.StandardSecret, "standard-secret", firstOf("ONCELEDGER_STANDARD_SECRETS"), "Standard Webhooks secret whsec_<base64> (default: first of ONCELEDGER_STANDARD_SECRETS)")
	fs.StringVar(&o.StripeSecret, "stripe-secret", firstOf("ONCELEDGER_STRIPE_SECRETS"), "Stripe signing secret whsec_… (default: first of ONCELEDGER_STRIPE_SECRETS)")
	fs.StringVar(&o.AlipayKeyFile, "alipay-private-key", "", "PEM file of the RSA private key that signs Alipay notifications (its public half in the server's ONCELEDGER_ALIPAY_PUBLIC_KEYS)")
	fs.StringVar(&o.AlipayAppID, "alipay-app-id", firstOf("ONCELEDGER_ALIPAY_APP_IDS"), "app_id of the Alipay notifications (default: first of ONCELEDGER_ALIPAY_APP_IDS)")
	fs.StringVar(&o.WechatpayKeyFile, "wechatpay-private-key", "", "PEM file of the RSA private key that signs WeChat Pay notifications (its public half in the server's ONCELEDGER_WECHATPAY_KEYS)")
	fs.StringVar(&o.WechatpaySerial, "wechatpay-serial", firstSerial(), "Wechatpay-Serial of the signing key (default: the serial of the first ONCELEDGER_WECHATPAY_KEYS entry)")
	fs.StringVar(&o.WechatpayAPIv3Key, "wechatpay-apiv3-key", firstOf("ONCELEDGER_WECHATPAY_APIV3_KEYS"), "32-byte APIv3 key that encrypts the resources (default: first of ONCELEDGER_WECHATPAY_APIV3_KEYS)")
	fs.StringVar(&o.WechatpayMchID, "wechatpay-mchid", firstOf("ONCELEDGER_WECHATPAY_MCHIDS"), "mchid of the WeChat Pay notifications (default: first of ONCELEDGER_WECHATPAY_MCHIDS)")
	fs.IntVar(&o.Payments, "payments", 1000, "payments to generate (0 = until --duration)")
	fs.IntVar(&o.Concurrency, "concurrency", 64, "concurrent senders")
	fs.IntVar(&o.Window, "window", 0, "payments in flight at once, interleaved (default 4 × concurrency)")
	fs.Float64Var(&o.Rate, "rate", 0, "deliveries per second across all senders (0 = as fast as possible)")
	fs.BoolVar(&o.OpenLoop, "open-loop", false, "with --rate: a fixed offered rate whatever the answers, latency counted from each delivery's scheduled send time (a send that waits for a free sender or connection carries that wait); --concurrency is raised to --max-conns")
	fs.IntVar(&o.MaxConns, "max-conns", 0, "connections to each server at most (0: unbounded, or 768 with --open-loop: below serve's 1,024-connection budget, so that the generator never has its own connections closed by the budget)")
	fs.DurationVar(&o.Grace, "grace", 30*time.Second, "with --duration: the run ends hard this long after the duration; deliveries not answered 2xx by then are counted as unanswered (failures) and the ledger is not compared (0 = no hard end)")
	fs.Float64Var(&o.Duplicates, "duplicates", 0.2, "extra identical deliveries per delivery; about 30% of them concurrent with the first")
	fs.Float64Var(&o.Reorder, "reorder", 0.1, "share of the payments with refunds or disputes that send them before their capture (shuffled)")
	fs.Float64Var(&o.Conflicts, "conflicts", 0.01, "share of deliveries redelivered with the same id and a changed payload (must not change the ledger)")
	fs.DurationVar(&o.Duration, "duration", 0, "stop starting payments after this long (started ones finish; 0 = no cap)")
	fs.DurationVar(&o.Wait, "wait", 60*time.Second, "how long the ledger may take to settle after the last delivery (projections caught up, balances re-read until they match)")
	fs.Uint64Var(&o.Seed, "seed", 0, "random seed (0 = random; printed so a run can be repeated)")
	fs.StringVar(&o.RunID, "run-id", "", "prefix making this run's ids unique (default random; reusing one replays the ids)")
	fs.BoolVar(&o.Baseline, "baseline", true, "compare the change since the start (a shared database); --baseline=false compares absolute balances (a fresh database)")
	fs.IntVar(&o.MaxAttempts, "max-attempts", 8, "attempts per delivery before giving up")
	fs.DurationVar(&o.Backoff, "backoff", 100*time.Millisecond, "first retry delay (doubles per attempt)")
	fs.DurationVar(&o.MaxBackoff, "max-backoff", 5*time.Second, "retry delay cap")
	fs.DurationVar(&o.Timeout, "timeout", 30*time.Second, "per-request timeout")
	fs.DurationVar(&o.LagInterval, "lag-interval", 250*time.Millisecond, "poll /v1/projections this often while loading (0 = off)")
	fs.BoolVar(&o.JSON, "json", false, "print a machine-readable JSON summary instead of text")
	fs.IntVar(&o.Procs, "procs", 1, "cores the generator's Go scheduler may use at once (GOMAXPROCS; 0 = all): one is plenty for a few thousand sends/s, and spares the cores it shares with the server the runtime's spinning for work (about 30% of its CPU per send with two)")
	fs.BoolVar(&o.Presign, "presign", true, "generate and sign every delivery (HMAC and RSA alike) before the clock starts, when the run's size is known (--payments, or --rate with --duration), so that the sends are all the generator does while it runs; first attempts carry those signatures (retries sign afresh)")
	fs.StringVar(&o.CPUProfile, "cpu-profile", "", "write a CPU profile of the generator to this file (its own cost per send)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if o.Procs < 0 {
		return o, errors.New("--procs must be 0 (all cores) or more")
	}
	if o.Seed == 0 {
		o.Seed = randomSeed()
	}
	if o.RunID == "" {
		o.RunID = strconv.FormatUint(randomSeed()%(36*36*36*36*36*36), 36)
	}
	var errs []error
	o.URL = strings.Join(o.urls(), ",")
	if o.URL == "" {
		errs = append(errs, errors.New("--url must name at least one server"))
	}
	if o.Concurrency < 1 {
		errs = append(errs, errors.New("--concurrency must be at least 1"))
	}
	if o.Payments < 0 || (o.Payments == 0 && o.Duration <= 0) {
		errs = append(errs, errors.New("--payments must be positive, or 0 with a --duration"))
	}
	if o.MaxAttempts < 1 {
		errs = append(errs, errors.New("--max-attempts must be at least 1"))
	}
	if o.OpenLoop {
		if o.Rate <= 0 {
			errs = append(errs, errors.New("--open-loop needs a --rate"))
		}
		o.openLoopPool()
	}
	if o.MaxConns < 0 {
		errs = append(errs, errors.New("--max-conns must be 0 (unbounded) or more"))
	}
	if o.Grace < 0 {
		errs = append(errs, errors.New("--grace must be 0 (no hard end) or more"))
	}
	if o.Token == "" {
		errs = append(errs, errors.New("--token (or ONCELEDGER_API_TOKENS) is needed to read /v1/balances"))
	}
	for _, p := range o.providers() {
		switch p {
		case scenario.Stripe:
			if o.StripeSecret == "" {
				errs = append(errs, fmt.Errorf("%w: --stripe-secret or ONCELEDGER_STRIPE_SECRETS", errNoSecret))
			}
		case scenario.Standard:
			if o.StandardSecret == "" {
				errs = append(errs, fmt.Errorf("%w: --standard-secret or ONCELEDGER_STANDARD_SECRETS", errNoSecret))
			}
		case scenario.Alipay:
			if o.AlipayKeyFile == "" || o.AlipayAppID == "" {
				errs = append(errs, fmt.Errorf("%w: --alipay-private-key and --alipay-app-id (or ONCELEDGER_ALIPAY_APP_IDS)", errNoSecret))
			}
		case scenario.Wechatpay:
			if o.WechatpayKeyFile == "" || o.WechatpaySerial == "" || o.WechatpayAPIv3Key == "" || o.WechatpayMchID == "" {
				errs = append(errs, fmt.Errorf("%w: --wechatpay-private-key, --wechatpay-serial, --wechatpay-apiv3-key and --wechatpay-mchid (or their environment defaults)", errNoSecret))
			}
		}
	}
	return o, errors.Join(errs...)
}

// urls is --url split at commas, without trailing slashes.
func (o options) urls() []string {
	var out []string
	for _, u := range strings.Split(o.URL, ",") {
		if u = strings.TrimRight(strings.TrimSpace(u), "/"); u != "" {
			out = append(out, u)
		}
	}
	return out
}

func (o options) providers() []string {
	var out []string
	for _, p := range strings.Split(o.Providers, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(2)
	}
	if o.Procs > 0 {
		runtime.GOMAXPROCS(o.Procs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop, err := startCPUProfile(o.CPUProfile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(2)
	}
	code := run(ctx, o, os.Stdout, os.Stderr)
	stop() // before os.Exit, which skips deferred calls
	os.Exit(code)
}

// startCPUProfile profiles the whole run into path ("" = off): the
// generator shares the machine with the server it measures, so what it
// costs per send is part of every figure it prints.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}

// summary is the run's result; --json prints it as is.
type summary struct {
	RunID       string  `json:"run_id"`
	Seed        uint64  `json:"seed"`
	URL         string  `json:"url"`
	Providers   string  `json:"providers"`
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"rate"`
	OpenLoop    bool    `json:"open_loop"`
	Duplicates  float64 `json:"duplicates"`
	Reorder     float64 `json:"reorder"`
	Conflicts   float64 `json:"conflicts"`

	Payments  int  `json:"payments"`
	Payouts   int  `json:"payouts"`
	Reordered int  `json:"reordered_payments"`
	Planned   plan `json:"planned_deliveries"`

	SendSeconds float64 `json:"send_seconds"`
	// SendCPUSeconds is the generator's own CPU (user+system) while it
	// sent: without what it spent generating and signing before the
	// clock (--presign), which /usr/bin/time would count.
	SendCPUSeconds     float64  `json:"send_cpu_seconds"`
	Requests           int64    `json:"requests"`
	Delivered          int64    `json:"delivered"`
	DeliveriesPerSec   float64  `json:"deliveries_per_second"`
	RequestsPerSec     float64  `json:"requests_per_second"`
	LatencyMs          latency  `json:"latency_ms"`
	LateSends          int      `json:"late_sends"` // open-loop sends that left more than lateThreshold after their slot
	LateMs             latency  `json:"late_ms"`    // how far behind its slot each open-loop send left (0: on time)
	Outcomes           outcome  `json:"outcomes"`
	AnswersChecked     int      `json:"answers_checked"`
	AnswerViolations   []string `json:"answer_violations"`
	ConflictsDuplicate int      `json:"conflicts_answered_duplicate"`

	Lag              lagReport `json:"projection_lag"`
	CatchUpSeconds   float64   `json:"catch_up_seconds"`
	SettleSeconds    float64   `json:"settle_seconds"`
	BalanceReads     int       `json:"balance_reads"`
	ProjectionsError string    `json:"projections_error,omitempty"`
	Baseline         bool      `json:"baseline"`
	BalancesCompared int       `json:"balances_compared"`
	Differences      []diff    `json:"differences"`
	// Cut: the run reached its hard end (--duration + --grace) with
	// deliveries unanswered; NotSent are the planned deliveries never sent
	// (their turn came after the end, or their first delivery failed).
	Cut     bool   `json:"cut"`
	NotSent int    `json:"not_sent,omitempty"`
	Verdict string `json:"verdict"`
	Error   string `json:"error,omitempty"`
}

type latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

type outcome struct {
	Accepted int64 `json:"accepted"`
	// Acknowledged: Alipay's "success" and WeChat Pay's 204, which say the
	// facts are durable but not whether the delivery was a first arrival.
	Acknowledged int64 `json:"acknowledged"`
	Duplicate    int64 `json:"duplicate"`
	Ignored      int64 `json:"ignored"`
	Other2xx     int64 `json:"other_2xx"`
	Status4xx    int64 `json:"4xx"`
	Status5xx    int64 `json:"5xx"` // 5xx other than shed
	// Shed: 429 or 503 with Retry-After (admission refused the request
	// before its work; the sender retries after it), apart from 4xx and 5xx.
	Shed        int64 `json:"shed"`
	StatusOther int64 `json:"other_status"`
	Transport   int64 `json:"transport_errors"`
	Retries     int64 `json:"retries"`
	Undelivered int64 `json:"undelivered"`
	// Unanswered: deliveries cut by the hard end (in flight, waiting to
	// retry, or their slot due after it): failures, not waited for.
	Unanswered int64 `json:"unanswered"`
}

type diff struct {
	Account  string `json:"account"`
	Currency string `json:"currency"`
	Expected int64  `json:"expected"`
	Actual   int64  `json:"actual"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// lateThreshold is how far behind its slot an open-loop send may leave and
// still count as on time: a timer's wake-up and the send's own system call
// take tens of microseconds, so "late" counted every send (any positive
// delay) and said nothing. A send 1 ms behind its slot is the generator
// failing its schedule (all senders busy, or no CPU for it); whatever the
// threshold, latency still counts from the slot.
const lateThreshold = time.Millisecond

// run is the whole program after flag parsing; it returns the exit status.
func run(ctx context.Context, o options, stdout, stderr io.Writer) int {
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, "loadgen: "+format+"\n", args...) }
	sum := summary{RunID: o.RunID, Seed: o.Seed, URL: o.URL, Providers: o.Providers, Concurrency: o.Concurrency,
		Rate: o.Rate, OpenLoop: o.OpenLoop, Duplicates: o.Duplicates, Reorder: o.Reorder, Conflicts: o.Conflicts, Baseline: o.Baseline}
	fail := func(err error) int {
		sum.Error, sum.Verdict = err.Error(), "ERROR"
		logf("%v", err)
		if o.JSON {
			printJSON(stdout, sum)
		}
		return 2
	}

	cn, wx, err := cnSigners(o)
	if err != nil {
		return fail(err)
	}
	gen, err := scenario.New(scenario.Config{Providers: o.providers(), Duplicates: o.Duplicates, Reorder: o.Reorder,
		Conflicts: o.Conflicts, RunID: o.RunID, Seed: o.Seed, CN: cn})
	if err != nil {
		return fail(err)
	}
	var std *sign.Standard
	if o.StandardSecret != "" {
		if std, err = sign.NewStandard(o.StandardSecret); err != nil {
			return fail(err)
		}
	}
	client := newClient(o)
	urls := o.urls()
	if len(urls) == 0 {
		return fail(errors.New("no server URL"))
	}
	q := &api{base: urls[0], token: o.Token, client: client} // instances share one database
	base, err := baseline(ctx, q, o)
	if err != nil {
		return fail(err)
	}
	s := &sender{base: urls[0], bases: urls, client: client, stripeSecret: o.StripeSecret, standard: std, wechatpay: wx,
		maxAttempts: o.MaxAttempts, backoff: o.Backoff, maxBackoff: o.MaxBackoff,
		ans: newAnswers(), openLoop: o.OpenLoop, logf: logf}
	work, err := primeQueue(gen, o, s.presign, logf)
	if err != nil {
		return fail(err)
	}
	s.pace = newPacer(o.Rate) // the schedule starts after the generation

	lags := newLagTracker()
	cpu0 := processCPU()
	elapsed, cut, err := sendAll(ctx, o, s, q, work, lags, logf)
	if err != nil {
		return fail(err)
	}
	sum.SendCPUSeconds = (processCPU() - cpu0).Seconds()
	sum.recordTraffic(work, s, elapsed)
	if cut {
		// What was not answered by the hard end is a failure of the run,
		// and the ledger cannot match the model: report the traffic only.
		oc := sum.Outcomes
		sum.Cut = true
		sum.NotSent = max(0, sum.Planned.total()-int(sum.Delivered+oc.Undelivered+oc.Unanswered))
		sum.Verdict = fmt.Sprintf("CUT at the hard end (--duration %v + --grace %v): %d deliveries unanswered, %d not sent; ledger not compared",
			o.Duration, o.Grace, oc.Unanswered, sum.NotSent)
		sum.Differences = []diff{}
		if sum.AnswerViolations == nil {
			sum.AnswerViolations = []string{}
		}
		sum.Lag = lags.report()
		if o.JSON {
			printJSON(stdout, sum)
		} else {
			printText(stdout, sum, work.expected)
		}
		return 1
	}

	settleStart := time.Now()
	caught, err := waitCaughtUp(ctx, q, o.Wait, lags)
	sum.CatchUpSeconds = caught.Seconds()
	if err != nil {
		sum.ProjectionsError = err.Error() // compare anyway: the differences say what is missing
	}
	sum.Lag = lags.report()
	if err := sum.compareLedger(ctx, q, o.Wait, base, work.expected, settleStart); err != nil {
		return fail(err)
	}

	if o.JSON {
		printJSON(stdout, sum)
	} else {
		printText(stdout, sum, work.expected)
	}
	if len(sum.Differences) > 0 || len(sum.AnswerViolations) > 0 {
		return 1
	}
	return 0
}

// processCPU is the CPU time (user and system) this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cnSigners loads the Alipay and WeChat Pay keys the options name (none
// named: none loaded). The WeChat signer also signs each attempt's headers.
func cnSigners(o options) (scenario.CN, *sign.Wechatpay, error) {
	cn := scenario.CN{AlipayAppID: o.AlipayAppID, MchID: o.WechatpayMchID}
	load := func(path string) (*rsa.PrivateKey, error) {
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		k, err := sign.ParseRSAPrivateKey(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return k, nil
	}
	if o.AlipayKeyFile != "" {
		k, err := load(o.AlipayKeyFile)
		if err != nil {
			return cn, nil, err
		}
		cn.Alipay = sign.NewAlipay(k)
	}
	if o.WechatpayKeyFile != "" {
		k, err := load(o.WechatpayKeyFile)
		if err != nil {
			return cn, nil, err
		}
		if cn.Wechatpay, err = sign.NewWechatpay(k, o.WechatpaySerial, o.WechatpayAPIv3Key); err != nil {
			return cn, nil, err
		}
	}
	return cn, cn.Wechatpay, nil
}

// openLoopPool sizes an open-loop run's pool (--max-conns, the senders)
// and its window.
func (o *options) openLoopPool() {
	// A bounded pool: MaxConns connections, a sender each, pulling
	// slots from the schedule. One sender per offered delivery per
	// second (session 8: 8,009 senders at 8,009/s) opened more
	// connections than serve's budget (1,024), which closed them, and
	// the retries of those deliveries, with a window of 4 x 8,009
	// payments to finish, never ended. A sender that is busy when its
	// next slot is due sends late, and the delivery's latency still
	// counts from the slot (no coordinated omission): the queueing in
	// the generator counts against the server.
	if o.MaxConns == 0 {
		o.MaxConns = defaultOpenLoopConns
	}
	if o.Window <= 0 {
		// Four seconds of the offered rate (at least four per sender
		// asked for), as when open loop ran a sender per delivery a
		// second: the pool does not change the traffic's interleaving,
		// nor how long the payments begun by the end of --duration
		// take to finish at the offered rate.
		o.Window = 4 * max(o.Concurrency, int(o.Rate))
	}
	o.Concurrency = max(o.Concurrency, o.MaxConns)
}

// defaultOpenLoopConns is --max-conns with --open-loop: three quarters of
// serve's default connection budget (ONCELEDGER_MAX_CONNECTIONS, 1,024),
// so that the budget never closes the generator's connections, and three
// times serve's default in-flight budget (256), so that an overload still
// reaches the server's admission (shed with 503) instead of queueing in
// the generator alone.
const defaultOpenLoopConns = 768

// newClient is the HTTP client of every request: a connection pool sized
// for the senders, at most MaxConns connections to a server.
func newClient(o options) *http.Client {
	transport := &http.Transport{
		Proxy:               nil, // loopback benchmarks must not detour through a proxy
		MaxIdleConns:        4 * o.Concurrency,
		MaxIdleConnsPerHost: 4 * o.Concurrency,
		MaxConnsPerHost:     o.MaxConns,
		IdleConnTimeout:     90 * time.Second,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	}
	return &http.Client{Transport: transport, Timeout: o.Timeout}
}

// baseline waits for the projections, since the baseline must be a settled
// ledger, and returns it (empty unless --baseline).
func baseline(ctx context.Context, q *api, o options) (*model.Ledger, error) {
	base := model.New()
	if _, err := waitCaughtUp(ctx, q, o.Wait, nil); err != nil {
		return nil, fmt.Errorf("before the run: %w", err)
	}
	if o.Baseline {
		var err error
		if base, _, err = q.balances(ctx); err != nil {
			return nil, fmt.Errorf("baseline: %w", err)
		}
	}
	return base, nil
}

// primeQueue returns the run's queue of payments, its first window
// generated. The first window of payments (4,000 at 1,000/s open loop:
// their bodies, JSON and model facts) is generated before the clock
// starts: generated on the first senders' path, it made the first few
// hundred slots of every run late by up to a few hundred ms, a share of
// the p99 that had nothing to do with the server.
func primeQueue(gen *scenario.Generator, o options, presign func(*scenario.Delivery) error, logf func(string, ...any)) (*queue, error) {
	window := o.Window
	if window <= 0 {
		window = 4 * o.Concurrency
	}
	work := newQueue(gen, o.Seed, window, o.Payments, time.Time{})
	if o.Presign && presign != nil {
		// Everything the run will send, generated and signed now: a fixed
		// number of payments, or what a rate sends in the duration (a few
		// percent more; the rest is never activated, and so never in the
		// expected ledger). An open-ended run generates as it goes.
		deliveries := 0
		if o.Payments <= 0 && o.Rate > 0 && o.Duration > 0 {
			deliveries = int(o.Rate*o.Duration.Seconds()*1.05) + window
		}
		if o.Payments > 0 || deliveries > 0 {
			start := time.Now()
			if err := work.Pregenerate(o.Payments, deliveries, presign); err != nil {
				return nil, err
			}
			logf("%d payments generated and signed before the run in %s", len(work.pending), time.Since(start).Round(time.Millisecond))
		}
	}
	work.Prime()
	if o.Duration > 0 {
		work.deadline = time.Now().Add(o.Duration) // no sender runs yet
	}
	return work, nil
}

// sendAll runs the senders over work until it is done, sampling the lag
// meanwhile, and returns how long they took. First Ctrl-C: start no more
// payments, finish the started ones and compare. Second: abort. With a
// --duration and a --grace, the run ends hard at their sum: the senders'
// requests and retry waits are cancelled, no job is handed out any more,
// and cut says so (the deliveries then unanswered are counted as such).
func sendAll(ctx context.Context, o options, s *sender, q *api, work *queue, lags *lagTracker, logf func(string, ...any)) (elapsed time.Duration, cut bool, err error) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	start := time.Now()
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	if o.Duration > 0 && o.Grace > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithDeadline(runCtx, start.Add(o.Duration+o.Grace))
		defer cancel()
	}
	sendCtx, abort := context.WithCancel(runCtx)
	defer abort()
	var aborted sync.Once
	go func() {
		for n := 0; ; n++ {
			select {
			case <-sigs:
				if n == 0 {
					logf("interrupted: finishing the started payments (again to abort)")
					work.Stop()
					continue
				}
				aborted.Do(func() { work.Abort(); abort() })
			case <-sendCtx.Done():
				if errors.Is(runCtx.Err(), context.DeadlineExceeded) {
					logf("hard end (--duration %v + --grace %v): unanswered deliveries count as failures", o.Duration, o.Grace)
					work.Abort()
				}
				return
			}
		}
	}()

	samplerCtx, stopSampler := context.WithCancel(ctx)
	var samplerDone sync.WaitGroup
	if o.LagInterval > 0 {
		samplerDone.Add(1)
		go func() { defer samplerDone.Done(); lags.sample(samplerCtx, q, o.LagInterval) }()
	}

	var senders sync.WaitGroup
	for range o.Concurrency {
		senders.Add(1)
		go func() { defer senders.Done(); s.work(sendCtx, work) }()
	}
	senders.Wait()
	s.retrying.Wait() // after a hard end or an abort, Next stops before they finish
	elapsed = time.Since(start)
	stopSampler()
	samplerDone.Wait()
	if errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		return elapsed, true, nil
	}
	if sendCtx.Err() != nil {
		return elapsed, false, errors.New("aborted: no comparison")
	}
	if work.err != nil {
		return elapsed, false, fmt.Errorf("generator: %w", work.err)
	}
	return elapsed, false, nil
}

// recordTraffic fills in what the run sent and how the server answered.
func (sum *summary) recordTraffic(work *queue, s *sender, elapsed time.Duration) {
	sum.Payments, sum.Payouts, sum.Reordered, sum.Planned = work.payments, work.payouts, work.reordered, work.planned
	sum.SendSeconds = elapsed.Seconds()
	sum.Requests, sum.Delivered = s.c.Requests.Load(), s.c.Delivered.Load()
	sum.DeliveriesPerSec = float64(sum.Delivered) / elapsed.Seconds()
	sum.RequestsPerSec = float64(sum.Requests) / elapsed.Seconds()
	l := s.latency.Summary()
	sum.LatencyMs = latency{P50: ms(l.P50), P90: ms(l.P90), P99: ms(l.P99), Max: ms(l.Max), Mean: ms(l.Mean)}
	late := s.late.Summary()
	sum.LateSends = s.late.CountAbove(lateThreshold)
	sum.LateMs = latency{P50: ms(late.P50), P90: ms(late.P90), P99: ms(late.P99), Max: ms(late.Max), Mean: ms(late.Mean)}
	sum.Outcomes = outcome{Accepted: s.c.Accepted.Load(), Acknowledged: s.c.Acknowledged.Load(), Duplicate: s.c.Duplicate.Load(), Ignored: s.c.Ignored.Load(),
		Other2xx: s.c.Other2xx.Load(), Status4xx: s.c.Status4xx.Load(), Status5xx: s.c.Status5xx.Load(), Shed: s.c.Shed.Load(),
		StatusOther: s.c.StatusOther.Load(), Transport: s.c.Transport.Load(), Retries: s.c.Retries.Load(),
		Undelivered: s.c.Undelivered.Load(), Unanswered: s.c.Unanswered.Load()}
	sum.AnswersChecked, sum.AnswerViolations = s.ans.violations()
	sum.ConflictsDuplicate = s.ans.conflictOK
}

// compareLedger compares the server's balances, less base, with expected,
// and gives the verdict.
//
// Lag 0 is not proof that the read models hold every event: the feed is
// read below the oldest running transaction of the whole Postgres cluster,
// so a long transaction elsewhere (another database included) hides
// committed events from the projectors, and from the lag count. The ledger
// a correct server converges to is exact, so it re-reads until it matches
// or wait (from settleStart) is spent, and says how long it took.
func (sum *summary) compareLedger(ctx context.Context, q *api, wait time.Duration, base, expected *model.Ledger, settleStart time.Time) error {
	var diffs []model.Difference
	for {
		end, n, err := q.balances(ctx)
		if err != nil {
			return fmt.Errorf("final balances: %w", err)
		}
		actual, err := end.Sub(base)
		if err != nil {
			return err
		}
		sum.BalancesCompared, sum.BalanceReads = n, sum.BalanceReads+1
		diffs = model.Diff(expected, actual)
		if len(diffs) == 0 || time.Since(settleStart) >= wait || !sleep(ctx, 250*time.Millisecond) {
			break
		}
	}
	sum.SettleSeconds = time.Since(settleStart).Seconds()
	for _, d := range diffs {
		sum.Differences = append(sum.Differences, diff{Account: d.Account, Currency: d.Currency, Expected: d.Expected, Actual: d.Actual})
	}
	if len(sum.Differences) == 0 {
		sum.Verdict = "MATCH"
	} else {
		sum.Verdict = fmt.Sprintf("MISMATCH (%d differences)", len(sum.Differences))
	}
	if sum.Differences == nil {
		sum.Differences = []diff{}
	}
	if sum.AnswerViolations == nil {
		sum.AnswerViolations = []string{}
	}
	return nil
}

func printJSON(w io.Writer, s summary) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(s)
}

func printText(w io.Writer, s summary, expected *model.Ledger) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("run %s  seed %d  providers %s  url %s", s.RunID, s.Seed, s.Providers, s.URL)
	p("traffic: %d payments (%d reordered) + %d payouts; deliveries planned %d = %d first + %d copies + %d concurrent twins + %d conflicting",
		s.Payments, s.Reordered, s.Payouts, s.Planned.total(), s.Planned.First, s.Planned.Copies, s.Planned.Twins, s.Planned.Conflicts)
	rate := "as fast as possible"
	if s.Rate > 0 {
		rate = fmt.Sprintf("paced at %g/s", s.Rate)
	}
	if s.OpenLoop {
		rate = fmt.Sprintf("open loop at %g/s offered (latency from the scheduled send time; %d sends left more than %v late; behind the slot p50 %.2f ms, p99 %.2f ms, max %.2f ms)",
			s.Rate, s.LateSends, lateThreshold, s.LateMs.P50, s.LateMs.P99, s.LateMs.Max)
	}
	p("throughput: %.1f deliveries/s (2xx), %.1f requests/s; %d delivered in %.2fs, %d senders, %s",
		s.DeliveriesPerSec, s.RequestsPerSec, s.Delivered, s.SendSeconds, s.Concurrency, rate)
	if s.Delivered > 0 {
		p("generator CPU while sending: %.3f ms per delivery (%.2fs)", s.SendCPUSeconds*1000/float64(s.Delivered), s.SendCPUSeconds)
	}
	p("latency ms: p50 %.2f  p90 %.2f  p99 %.2f  max %.2f  (mean %.2f, %d requests)",
		s.LatencyMs.P50, s.LatencyMs.P90, s.LatencyMs.P99, s.LatencyMs.Max, s.LatencyMs.Mean, s.Requests)
	o := s.Outcomes
	p("outcomes: accepted %d  duplicate %d  ignored %d  acknowledged %d  other-2xx %d | shed (429/503 with Retry-After) %d  other 4xx %d  other 5xx %d  transport errors %d | retries %d  undelivered %d  unanswered at the hard end %d",
		o.Accepted, o.Duplicate, o.Ignored, o.Acknowledged, o.Other2xx, o.Shed, o.Status4xx, o.Status5xx, o.Transport, o.Retries, o.Undelivered, o.Unanswered)
	if len(s.AnswerViolations) == 0 {
		p("answers: OK (%d dedup keys answered as a first arrival exactly once; %d conflicting redeliveries answered duplicate or acknowledged)",
			s.AnswersChecked, s.ConflictsDuplicate)
	} else {
		p("answers: VIOLATION (%d)", len(s.AnswerViolations))
		for _, v := range s.AnswerViolations {
			p("  %s", v)
		}
	}
	if s.Lag.Polls > 0 {
		p("projection lag while loading (%d polls): events p50 %d  p99 %d  max %d; seconds (approx.) p50 %.2f  p99 %.2f  max %.2f",
			s.Lag.Polls, s.Lag.EventsP50, s.Lag.EventsP99, s.Lag.EventsMax, s.Lag.SecondsP50, s.Lag.SecondsP99, s.Lag.SecondsMax)
	}
	if s.ProjectionsError != "" {
		p("projections: %s", s.ProjectionsError)
	} else {
		p("projections: caught up %.2fs after the last delivery", s.CatchUpSeconds)
	}
	mode := "change since the start of the run"
	if !s.Baseline {
		mode = "absolute balances"
	}
	p("ledger: %d expected balances vs %d server balances (%s); %d reads, settled %.2fs after the last delivery",
		len(expected.Balances()), s.BalancesCompared, mode, s.BalanceReads, s.SettleSeconds)
	if len(s.Differences) > 0 {
		p("  %-32s %-8s %16s %16s %16s", "account", "currency", "expected", "actual", "actual-expected")
		for _, d := range s.Differences {
			p("  %-32s %-8s %16d %16d %16d", d.Account, d.Currency, d.Expected, d.Actual, d.Actual-d.Expected)
		}
	}
	p("ledger: %s", s.Verdict)
}
