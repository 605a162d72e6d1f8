package outbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// worker delivers one subscription: it claims due stream heads (live
// first; replays only in the slots left and at most a quarter of them),
// POSTs them concurrently within the endpoint's bounds, and records the
// results in batches.
type worker struct {
	s      *Sender
	cancel context.CancelFunc
	nudge  chan struct{}
	done   chan struct{}

	mu       sync.Mutex
	cfg      Leased
	nextSlot time.Time // the rate limit: the earliest time of the next POST
}

func newWorker(s *Sender, l Leased) *worker {
	return &worker{s: s, cfg: l, nudge: make(chan struct{}, 1), done: make(chan struct{})}
}

func (w *worker) set(l Leased) {
	w.mu.Lock()
	w.cfg = l
	w.mu.Unlock()
}

func (w *worker) config() Leased {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cfg
}

func (w *worker) poke() {
	select {
	case w.nudge <- struct{}{}:
	default:
	}
}

func (w *worker) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// flight is the worker's loop state: the streams in flight per lane.
type flight struct {
	live, replay map[string]bool
}

func (f flight) n() int { return len(f.live) + len(f.replay) }

func (w *worker) run(ctx context.Context) {
	defer close(w.done)
	results := make(chan Result, w.s.Options.Concurrency)
	fl := flight{live: map[string]bool{}, replay: map[string]bool{}}
	ticker := time.NewTicker(w.s.Options.Poll)
	defer ticker.Stop()
	disabled := false
	for {
		if !disabled && ctx.Err() == nil {
			w.fill(ctx, fl, results)
		}
		if (disabled || ctx.Err() != nil) && fl.n() == 0 {
			return
		}
		select {
		case r := <-results:
			batch := []Result{r}
			for more := true; more; {
				select {
				case r := <-results:
					batch = append(batch, r)
				default:
					more = false
				}
			}
			disabled = w.record(ctx, fl, batch) || disabled
		case <-w.nudge:
		case <-ticker.C:
		case <-ctx.Done():
			// The requests in flight end with ctx; their heads stay held
			// and are tried again after the hold (at least once).
			for fl.n() > 0 {
				r := <-results
				delete(laneSet(fl, r.Lane), r.StreamKey)
			}
			return
		}
	}
}

func laneSet(fl flight, lane int) map[string]bool {
	if lane == LaneReplay {
		return fl.replay
	}
	return fl.live
}

// fill claims heads for the free slots and starts their POSTs.
func (w *worker) fill(ctx context.Context, fl flight, results chan<- Result) {
	conc := w.s.Options.Concurrency
	cfg := w.config()
	now := w.s.Now()
	hold := now.Add(Timeout + 5*time.Second)
	claim := func(lane, n int) {
		if n <= 0 {
			return
		}
		set := laneSet(fl, lane)
		skip := make([]string, 0, len(set))
		for k := range set {
			skip = append(skip, k)
		}
		ds, err := w.s.Store.Claim(ctx, cfg.ID, lane, now, hold, skip, n)
		if err != nil {
			if ctx.Err() == nil {
				w.s.Log.Warn("outbox: claim", "subscription", cfg.ID, "error", err)
			}
			return
		}
		for _, d := range ds {
			set[d.StreamKey] = true
			go func() { results <- w.send(ctx, cfg, d) }()
		}
	}
	claim(LaneLive, conc-fl.n())
	replaySlots := max(1, conc/4)
	claim(LaneReplay, min(conc-fl.n(), replaySlots-len(fl.replay)))
}

// record stores a batch of results and reports whether one disabled the
// subscription.
func (w *worker) record(ctx context.Context, fl flight, batch []Result) bool {
	disabled := false
	for _, r := range batch {
		delete(laneSet(fl, r.Lane), r.StreamKey)
		disabled = disabled || r.Disable
	}
	if err := w.s.Store.Record(context.WithoutCancel(ctx), w.s.Now(), batch); err != nil {
		// The heads stay held: they are tried again after the hold.
		w.s.Log.Warn("outbox: record attempts", "subscription", w.config().ID, "error", err)
		return false
	}
	if disabled {
		cfg := w.config()
		last := batch[len(batch)-1].Error
		for _, r := range batch {
			if r.Disable {
				last = r.Error
			}
		}
		w.s.Log.Warn("outbox: subscription disabled: the retry schedule ran out", "subscription", cfg.ID, "url", cfg.URL, "error", last)
		if w.s.Disabled != nil {
			w.s.Disabled(context.WithoutCancel(ctx), cfg.ID, cfg.URL, last)
		}
	}
	return disabled
}

// wait takes the endpoint's next rate-limit slot.
func (w *worker) wait(ctx context.Context) error {
	w.mu.Lock()
	now := time.Now()
	at := w.nextSlot
	if at.Before(now) {
		at = now
	}
	w.nextSlot = at.Add(time.Duration(float64(time.Second) / w.s.Options.Rate))
	w.mu.Unlock()
	if d := time.Until(at); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// send POSTs one head and returns its result with what follows from it.
func (w *worker) send(ctx context.Context, cfg Leased, d Delivery) Result {
	r := Result{Delivery: d}
	status, err := w.post(ctx, cfg, d)
	r.At, r.Status = w.s.Now(), status
	switch {
	case err != nil:
		r.Error = err.Error()
	case status < 200 || status > 299:
		r.Error = "HTTP " + strconv.Itoa(status)
	default:
		r.Succeeded = true
		return r
	}
	r.Error = fmt.Sprintf("event %s attempt %d: %s", d.EventID, d.Attempt, r.Error)
	var ok bool
	if r.NextAt, ok = next(r.At, d.Attempt, w.s.Jitter); !ok {
		r.Disable = true
	}
	return r
}

// post makes the request: the Standard Webhooks headers (webhook-id is
// the event's id, the same on every attempt and replay), the body as
// queued, the time-out. Latency is measured around it.
func (w *worker) post(ctx context.Context, cfg Leased, d Delivery) (int, error) {
	if err := w.wait(ctx); err != nil {
		return 0, err
	}
	secrets, err := w.secrets(cfg)
	if err != nil {
		return 0, err
	}
	ts := time.Now()
	sig, err := Sign(secrets, d.EventID.String(), ts, d.Body)
	if err != nil {
		return 0, err
	}
	rctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, cfg.URL, bytes.NewReader(d.Body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "onceledger-webhooks/1")
	req.Header.Set("webhook-id", d.EventID.String())
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := w.s.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

// secrets are the subscription's signing secrets: the current one, and
// during a rotation the old one too.
func (w *worker) secrets(cfg Leased) ([]string, error) {
	if w.s.Sealer == nil {
		return nil, ErrNoSecretsKey
	}
	id := cfg.ID.String()
	cur, err := w.s.Sealer.Open(id, cfg.Secret)
	if err != nil {
		return nil, err
	}
	out := []string{cur}
	if cfg.OldSecret != nil && time.Now().Before(cfg.OldUntil) {
		old, err := w.s.Sealer.Open(id, cfg.OldSecret)
		if err != nil {
			return nil, err
		}
		out = append(out, old)
	}
	return out, nil
}
