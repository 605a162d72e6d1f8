// Command recv is the bench's subscriber (`bench/run.sh outbound`): an
// HTTP endpoint that receives onceledger's outbound webhooks, verifies each
// Standard Webhooks signature with the subscriptions' secrets, answers 204,
// and records when each arrived. GET /stats answers a JSON summary:
//
//   - received (POSTs), unique (distinct webhook-ids) and per subscription
//     path (/s/NAME);
//   - latency_ms p50/p99/max of the first receipt of each event, counted
//     from the event's recorded_at: the commit of the webhook that made the
//     fact, which comes before the webhook's 200, so the figure is an upper
//     bound of "webhook 200 to the subscriber's receipt" (one machine, one
//     clock);
//   - the first and last receipt (Unix seconds) and the receipt rate
//     between them (the sender's throughput).
//
// `recv jetstream --url URL --stream NAME --want N` instead waits until the
// stream holds N messages and prints the publish rate from the stream's own
// first and last message times.
//
// The seen ids are kept in memory: this is a measuring tool, not a
// consumer (see docs/examples/shipper for one).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

func main() {
	var err error
	if len(os.Args) > 1 && os.Args[1] == "jetstream" {
		err = jetstreamRate(os.Args[2:])
	} else {
		err = serve(os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "recv:", err)
		os.Exit(1)
	}
}

// recorder is what the endpoint saw.
type recorder struct {
	verifiers []*standardwebhooks.Webhook

	mu          sync.Mutex
	received    int
	seen        map[string]bool
	perPath     map[string]int
	latencies   []float64 // ms, first receipt of each id
	first, last time.Time
	refused     int
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/stats" {
		rc.stats(w)
		return
	}
	now := time.Now()
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "body", http.StatusBadRequest)
		return
	}
	ok := false
	for _, v := range rc.verifiers {
		if v.Verify(body, r.Header) == nil {
			ok = true
			break
		}
	}
	var e struct {
		RecordedAt time.Time `json:"recorded_at"`
	}
	if !ok || json.Unmarshal(body, &e) != nil {
		rc.mu.Lock()
		rc.refused++
		rc.mu.Unlock()
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	id := r.URL.Path + " " + r.Header.Get("webhook-id")
	rc.mu.Lock()
	rc.received++
	if !rc.seen[id] {
		rc.seen[id] = true
		rc.perPath[r.URL.Path]++
		rc.latencies = append(rc.latencies, float64(now.Sub(e.RecordedAt).Microseconds())/1000)
		if rc.first.IsZero() {
			rc.first = now
		}
		rc.last = now
	}
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// quantile of sorted xs (nearest rank).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(q*float64(len(xs))+0.5) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

func (rc *recorder) stats(w http.ResponseWriter) {
	rc.mu.Lock()
	lat := slices.Clone(rc.latencies)
	out := map[string]any{
		"received": rc.received, "unique": len(rc.seen), "refused": rc.refused, "per_path": rc.perPath,
	}
	first, last := rc.first, rc.last
	rc.mu.Unlock()
	slices.Sort(lat)
	out["latency_ms"] = map[string]float64{"p50": quantile(lat, 0.5), "p99": quantile(lat, 0.99), "max": quantile(lat, 1)}
	rate := 0.0
	if span := last.Sub(first).Seconds(); span > 0 {
		rate = float64(len(lat)-1) / span
	}
	out["per_second"] = rate
	if !first.IsZero() {
		out["first_unix"] = float64(first.UnixMicro()) / 1e6
		out["last_unix"] = float64(last.UnixMicro()) / 1e6
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func serve(args []string) error {
	fs := flag.NewFlagSet("recv", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8091", "listen address")
	secrets := fs.String("secrets", "", "comma-separated whsec_… secrets of the subscriptions")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rc := &recorder{seen: map[string]bool{}, perPath: map[string]int{}}
	for _, s := range strings.Split(*secrets, ",") {
		if s = strings.TrimSpace(s); s != "" {
			v, err := standardwebhooks.NewWebhook(s)
			if err != nil {
				return fmt.Errorf("--secrets: %w", err)
			}
			rc.verifiers = append(rc.verifiers, v)
		}
	}
	if len(rc.verifiers) == 0 {
		return errors.New("--secrets is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Addr: *addr, Handler: rc, ReadHeaderTimeout: 5 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// jetstreamRate waits until the stream holds want messages (or the
// timeout) and prints its count and publish rate as JSON.
func jetstreamRate(args []string) error {
	fs := flag.NewFlagSet("recv jetstream", flag.ContinueOnError)
	url := fs.String("url", "nats://127.0.0.1:4222", "NATS URL")
	stream := fs.String("stream", "ONCELEDGER", "stream name")
	want := fs.Uint64("want", 1, "messages to wait for")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after")
	remove := fs.Bool("delete", false, "delete the stream afterwards")
	if err := fs.Parse(args); err != nil {
		return err
	}
	nc, err := nats.Connect(*url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := natsjs.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var st natsjs.StreamState
	for {
		s, err := js.Stream(ctx, *stream)
		if err == nil {
			info, err := s.Info(ctx)
			if err == nil {
				st = info.State
			}
		}
		if st.Msgs >= *want || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if *remove {
		_ = js.DeleteStream(context.Background(), *stream)
	}
	rate := 0.0
	if span := st.LastTime.Sub(st.FirstTime).Seconds(); span > 0 {
		rate = float64(st.Msgs-1) / span
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"messages": st.Msgs, "want": *want, "per_second": rate, "complete": st.Msgs >= *want,
	})
}
