// Command expectsweep is the bench's tool for expected payments
// (`bench/run.sh expect`, issue 36):
//
//	expectsweep doubles  --addr A --key K --prefix P --n N --amount M
//	    serves the Stripe double (adapters/providers/stripe/stripeapi/stripefake,
//	    written from Stripe's API reference) on a real socket, knowing N
//	    succeeded PaymentIntents P0..P{N-1} of M minor units (usd); onceledger
//	    serve asks it as its Stripe API (ONCELEDGER_STRIPE_API_BASE). GET
//	    /_bench/stats answers how many PaymentIntents it was asked about and
//	    the first and last question's time; POST /_bench/reset zeroes them.
//	expectsweep register --url U --token T --prefix P --n N --amount M
//	    registers N expected payments (stripe, references P0..P{N-1}) through
//	    POST /v1/expected-payments with a writer token, --concurrency at a
//	    time: the real path (one expectation stream each); prints a JSON
//	    summary (registered, seconds, per_second, failures).
//	expectsweep explain --db URL
//	    prints the plan of the schedule's claim (adapters/postgres/expectstore
//	    ClaimPlan) on that database, and whether it reads expected_payments by
//	    its next_query_at index.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/adapters/postgres/expectstore"
	"github.com/onceledger/onceledger/adapters/providers/stripe/stripeapi/stripefake"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: expectsweep doubles|register|explain [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "doubles":
		err = doubles(os.Args[2:])
	case "register":
		err = register(os.Args[2:])
	case "explain":
		err = explain(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (doubles, register, explain)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "expectsweep:", err)
		os.Exit(1)
	}
}

// counter counts the PaymentIntent questions and when the first and last
// were asked.
type counter struct {
	mu          sync.Mutex
	asks        int64
	first, last time.Time
}

func (c *counter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/_bench/stats":
			c.mu.Lock()
			out := map[string]any{"asks": c.asks, "first_unix": unix(c.first), "last_unix": unix(c.last), "per_second": 0.0}
			if c.asks > 1 {
				out["per_second"] = float64(c.asks-1) / c.last.Sub(c.first).Seconds()
			}
			c.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(out)
			return
		case "/_bench/reset":
			c.mu.Lock()
			c.asks, c.first, c.last = 0, time.Time{}, time.Time{}
			c.mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/v1/payment_intents/") {
			now := time.Now()
			c.mu.Lock()
			c.asks++
			if c.first.IsZero() {
				c.first = now
			}
			c.last = now
			c.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

func unix(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

func doubles(args []string) error {
	fs := flag.NewFlagSet("doubles", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	key := fs.String("key", "sk_test_bench", "the API key the double accepts")
	prefix := fs.String("prefix", "pi_sweep_", "PaymentIntent id prefix")
	n := fs.Int("n", 10000, "succeeded PaymentIntents known")
	amount := fs.Int64("amount", 1000, "their amount (minor units, usd)")
	_ = fs.Parse(args)

	fake := stripefake.New(*key)
	created := time.Now().Add(-time.Hour).Unix()
	for i := range *n {
		id := fmt.Sprintf("%s%d", *prefix, i)
		fake.SetPaymentIntent(id, stripefake.PaymentIntent{Status: "succeeded", Amount: *amount, Currency: "usd",
			ChargeID: fmt.Sprintf("ch_%s%d", strings.TrimPrefix(*prefix, "pi_"), i), Created: created})
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: (&counter{}).wrap(fake), ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("listening on %s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func register(args []string) error {
	fs := flag.NewFlagSet("register", flag.ExitOnError)
	url := fs.String("url", "", "onceledger's base URL")
	token := fs.String("token", "", "a writer (or admin) token")
	provider := fs.String("provider", "stripe", "provider")
	prefix := fs.String("prefix", "pi_out_", "reference prefix")
	from := fs.Int("from", 0, "first index")
	n := fs.Int("n", 100000, "expectations to register")
	amount := fs.Int64("amount", 1000, "amount (minor units)")
	currency := fs.String("currency", "USD", "currency")
	expiresIn := fs.Duration("expires-in", 72*time.Hour, "expires_at, from now")
	conc := fs.Int("concurrency", 16, "registrations in flight")
	_ = fs.Parse(args)
	if *url == "" || *token == "" {
		return errors.New("register needs --url and --token")
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: *conc}}
	expires := time.Now().Add(*expiresIn).UTC().Format(time.RFC3339)
	next := int64(*from) - 1
	last := int64(*from + *n)
	var failures atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	var wg sync.WaitGroup
	for range *conc {
		wg.Go(func() {
			for {
				i := atomic.AddInt64(&next, 1)
				if i >= last {
					return
				}
				body, _ := json.Marshal(map[string]any{"provider": *provider, "reference": fmt.Sprintf("%s%d", *prefix, i),
					"amount": *amount, "currency": *currency, "expires_at": expires})
				if err := post(client, *url+"/v1/expected-payments", *token, body); err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	out := map[string]any{"registered": int64(*n) - failures.Load(), "failures": failures.Load(), "seconds": secs,
		"per_second": float64(int64(*n)-failures.Load()) / secs}
	if e := firstErr.Load(); e != nil {
		out["first_error"] = e
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		return err
	}
	if failures.Load() > 0 {
		return fmt.Errorf("%d registrations failed", failures.Load())
	}
	return nil
}

// post sends one registration, retrying a 503 (admission shed it) as a
// client would.
func post(client *http.Client, url, token string, body []byte) error {
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		_ = resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusCreated:
			return nil
		case resp.StatusCode == http.StatusServiceUnavailable && attempt < 20:
			time.Sleep(100 * time.Millisecond)
			continue
		}
		return fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
}

func explain(args []string) error {
	fs := flag.NewFlagSet("explain", flag.ExitOnError)
	db := fs.String("db", "", "database URL")
	_ = fs.Parse(args)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, *db)
	if err != nil {
		return err
	}
	defer pool.Close()
	plan, err := expectstore.New(pool).ClaimPlan(ctx, []string{"stripe", "alipay", "wechatpay"}, time.Now(), 100)
	if err != nil {
		return err
	}
	fmt.Println(plan)
	indexed := strings.Contains(plan, "expected_payments_query_idx") && !strings.Contains(plan, "Seq Scan on expected_payments")
	fmt.Printf("claim reads expected_payments by its next_query_at index: %v\n", indexed)
	if !indexed {
		return errors.New("the claim's plan does not use expected_payments_query_idx")
	}
	return nil
}
