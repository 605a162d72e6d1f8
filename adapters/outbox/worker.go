package outbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
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

	// replayAcked counts the replayed events recorded as delivered since
	// the last lease (whose ReplayPending counted the lane then): the
	// sender queues more of a replay as these go, not only at the next
	// lease renewal (a replay went at most 500 events per renewal, 100/s).
	replayAcked atomic.Int64

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

// flight is the worker's loop state. held are the streams per lane with a
// POST in flight or a result not yet recorded (a claim skips them);
// posting and replayPosting count the POSTs in flight (the concurrency
// bound); pending are results waiting for the recorder; dry says per lane
// that the last claim found fewer heads than it asked for: no claim again
// until something can have made one due (a nudge from the queueing step,
// a recorded batch, the ticker).
type flight struct {
	live, replay           map[string]bool
	posting, replayPosting int
	pending                []Result
	recording              bool
	dry                    [2]bool
}

func (f *flight) busy() bool { return f.posting > 0 || f.recording || len(f.pending) > 0 }

// run is the worker's loop. Claims and records overlap: a batch of results
// is recorded by one goroutine while the loop claims heads for the freed
// slots and starts their POSTs (each its own round trip, on its own
// connection). They used to run one after the other, and the loop's
// throughput was the slots over the sum of both round trips: at 1,000
// webhooks/s on a busy machine the recorder took 130 ms a batch, the
// worker fell behind the 400 captures/s, and its queue grew to 30 s
// (bench/run.sh outbound, traced per stage). A stream's next head is
// claimed only after its result is recorded (Record makes it due), so
// per-stream order stands; the results that arrive while a batch is being
// recorded make the next batch.
func (w *worker) run(ctx context.Context) {
	defer close(w.done)
	results := make(chan Result, w.s.Options.Concurrency)
	recorded := make(chan []Result, 1)
	fl := &flight{live: map[string]bool{}, replay: map[string]bool{}}
	ticker := time.NewTicker(w.s.Options.Poll)
	defer ticker.Stop()
	disabled := false
	for {
		if !disabled && ctx.Err() == nil {
			w.fill(ctx, fl, results)
		}
		if !fl.recording && len(fl.pending) > 0 {
			batch := fl.pending
			fl.pending, fl.recording = nil, true
			go func() { w.record(ctx, batch); recorded <- batch }()
		}
		if (disabled || ctx.Err() != nil) && !fl.busy() {
			return
		}
		select {
		case r := <-results:
			for more := true; more; {
				w.settle(fl, r)
				disabled = disabled || r.Disable
				select {
				case r = <-results:
				default:
					more = false
				}
			}
		case batch := <-recorded:
			fl.recording, fl.dry = false, [2]bool{}
			for _, r := range batch {
				delete(laneSet(fl, r.Lane), r.StreamKey)
			}
		case <-w.nudge:
			fl.dry = [2]bool{}
		case <-ticker.C:
			fl.dry = [2]bool{}
		case <-ctx.Done():
			w.stop(fl, results, recorded)
			return
		}
	}
}

// settle takes a POST's result: its slot is free, the result waits for the
// recorder.
func (w *worker) settle(fl *flight, r Result) {
	fl.posting--
	if r.Lane == LaneReplay {
		fl.replayPosting--
	}
	fl.pending = append(fl.pending, r)
}

// stop ends the loop with ctx: the requests in flight end with it and the
// batch being recorded is finished; the results not recorded leave their
// heads held, tried again after the hold (at least once).
func (w *worker) stop(fl *flight, results <-chan Result, recorded <-chan []Result) {
	for ; fl.posting > 0; fl.posting-- {
		<-results
	}
	if fl.recording {
		<-recorded
	}
}

func laneSet(fl *flight, lane int) map[string]bool {
	if lane == LaneReplay {
		return fl.replay
	}
	return fl.live
}

// fill claims heads for the free slots (live first; replays only in the
// slots left and at most a quarter of them) and starts their POSTs.
func (w *worker) fill(ctx context.Context, fl *flight, results chan<- Result) {
	conc := w.s.Options.Concurrency
	cfg := w.config()
	now := w.s.Now()
	hold := now.Add(Timeout + 5*time.Second)
	claim := func(lane, n int) {
		if n <= 0 || fl.dry[lane] {
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
		fl.dry[lane] = len(ds) < n
		for _, d := range ds {
			set[d.StreamKey] = true
			fl.posting++
			if lane == LaneReplay {
				fl.replayPosting++
			}
			go func() { results <- w.send(ctx, cfg, d) }()
		}
	}
	claim(LaneLive, conc-fl.posting)
	if cfg.Replay != nil || cfg.ReplayPending > 0 || fl.replayPosting > 0 {
		// Otherwise no replay row can be queued (the lease that shows a
		// replay comes before its first rows): the round trip is skipped.
		claim(LaneReplay, min(conc-fl.posting, max(1, conc/4)-fl.replayPosting))
	}
}

// record stores a batch of results (attempts logged, heads moved on or
// rescheduled) in one transaction, and tells of a subscription it
// disabled.
func (w *worker) record(ctx context.Context, batch []Result) {
	if err := w.s.Store.Record(context.WithoutCancel(ctx), w.s.Now(), batch); err != nil {
		// The heads stay held: they are tried again after the hold.
		w.s.Log.Warn("outbox: record attempts", "subscription", w.config().ID, "error", err)
		return
	}
	last, disabled, replayed := "", false, 0
	for _, r := range batch {
		if r.Disable {
			last, disabled = r.Error, true
		}
		if r.Succeeded && r.Lane == LaneReplay {
			replayed++
		}
	}
	if replayed > 0 {
		// The sender queues more at its next step (at most Poll away).
		w.replayAcked.Add(int64(replayed))
	}
	if !disabled {
		return
	}
	cfg := w.config()
	w.s.Log.Warn("outbox: subscription disabled: the retry schedule ran out", "subscription", cfg.ID, "host", Host(cfg.URL), "error", last)
	if w.s.Disabled != nil {
		w.s.Disabled(context.WithoutCancel(ctx), cfg.ID, cfg.URL, last)
	}
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
	status, latency, err := w.post(ctx, cfg, d)
	r.At, r.Status, r.Latency = w.s.Now(), status, latency
	switch {
	case err != nil:
		r.Error = attemptError(err, Host(cfg.URL))
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
func (w *worker) post(ctx context.Context, cfg Leased, d Delivery) (int, time.Duration, error) {
	if err := w.wait(ctx); err != nil {
		return 0, 0, err
	}
	secrets, err := w.secrets(cfg)
	if err != nil {
		return 0, 0, err
	}
	ts := time.Now()
	sig, err := Sign(secrets, d.EventID.String(), ts, d.Body)
	if err != nil {
		return 0, 0, err
	}
	rctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, cfg.URL, bytes.NewReader(d.Body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "onceledger-webhooks/1")
	req.Header.Set("webhook-id", d.EventID.String())
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := w.s.Client.Do(req)
	if err != nil {
		return 0, time.Since(ts), err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, time.Since(ts), nil
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
