package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// DefaultSweepAge is how long a row stays "received" before the sweeper
// takes it over: long enough that a row is no longer in its first request's
// hands (that request re-drives nothing, it just finishes), short enough that
// a fact lost to a crash reaches the ledger soon.
const DefaultSweepAge = 30 * time.Second

// PollInterval is the pause of every worker between empty polls, and the
// base of its backoff after a failed attempt.
const PollInterval = 2 * time.Second

// Worker drives inbox rows that were stored before their facts were
// recorded: held deliveries waiting for their provider's verification
// (Postback set), or rows left "received": by a two-phase unit when the
// process died between the inbox commit and the append, or by a migration
// that hands rows back to the domain (00010 re-drives double-booked PayPal
// IPN rows, on the Postgres event store too). All its state is in the
// inbox, so it survives restarts, and leases let several instances share the
// work. Workers builds the ones a Service needs.
type Worker struct {
	Name     string // for logs
	Queue    Queue
	Service  *Service
	Status   string   // the status of rows to drive
	Postback Postback // nil: apply without verification
	// OlderThan: only rows first seen longer ago (a row still in its first
	// request's hands is not the sweeper's). Lease: how long a claimed row is
	// left alone. Interval: pause between empty polls.
	OlderThan, Lease, Interval time.Duration
	// Parallel: postbacks in flight at once (verifier only; default 8).
	Parallel int
	Log      *slog.Logger
}

// WorkerOptions configure the background workers of a Service.
type WorkerOptions struct {
	// SweepAge: a row still "received" after this long is re-driven
	// (DefaultSweepAge when 0). Rows scheduled for an attempt (a migration's
	// re-drive, a failed one) are due at that time instead.
	SweepAge time.Duration
	// Postback verifies held deliveries; nil when no provider holds them.
	Postback Postback
	Log      *slog.Logger
}

// Workers returns the background workers s needs, each to run in one
// goroutine per instance: the sweeper, and the verifier of held deliveries
// when a postback is given.
//
// The sweeper runs whatever the journal. A two-phase journal leaves rows
// "received" in its normal course; an atomic one never commits a row
// "received", but a migration may set rows back to it for the domain to
// apply again (00010: PayPal IPN rows whose events were a double booking),
// and nothing else would drive them. With nothing to do it costs one claim
// per poll on the inbox's partial index of pending rows.
func (s *Service) Workers(q Queue, o WorkerOptions) []*Worker {
	out := []*Worker{s.Sweeper(q, o.SweepAge, o.Log)}
	if o.Postback != nil {
		out = append(out, s.newWorker("held-verifier", q, StatusUnverified, 0, o.Log, o.Postback))
	}
	return out
}

// Sweeper returns the worker that re-drives rows left "received" for longer
// than olderThan (DefaultSweepAge when 0).
func (s *Service) Sweeper(q Queue, olderThan time.Duration, log *slog.Logger) *Worker {
	if olderThan <= 0 {
		olderThan = DefaultSweepAge
	}
	return s.newWorker("received-sweeper", q, StatusReceived, olderThan, log, nil)
}

func (s *Service) newWorker(name string, q Queue, status string, olderThan time.Duration, log *slog.Logger, pb Postback) *Worker {
	if log == nil {
		log = slog.Default()
	}
	return &Worker{Name: name, Queue: q, Service: s, Status: status, Postback: pb,
		OlderThan: olderThan, Lease: time.Minute, Interval: PollInterval, Parallel: 8, Log: log}
}

// Run polls until ctx ends.
func (w *Worker) Run(ctx context.Context) error {
	if w.Interval <= 0 {
		w.Interval = PollInterval
	}
	for {
		n, err := w.Once(ctx)
		if err != nil && ctx.Err() == nil {
			w.Log.Warn("inbox worker pass failed", "worker", w.Name, "error", err)
		}
		if n > 0 && err == nil {
			continue // there may be more due
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(w.Interval):
		}
	}
}

// Once drives one batch of due rows and returns how many it claimed. A
// verifier (Postback set) drives up to Parallel rows at once, so that one
// slow postback does not hold the rows behind it.
func (w *Worker) Once(ctx context.Context) (int, error) {
	keys, err := w.Queue.Claim(ctx, w.Status, w.OlderThan, w.Lease, 50)
	if err != nil {
		return 0, err
	}
	parallel := 1
	if w.Postback != nil {
		parallel = max(w.Parallel, 1)
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, parallel)
	)
	for _, k := range keys {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := w.drive(ctx, k); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return len(keys), errors.Join(errs...)
}

func (w *Worker) drive(ctx context.Context, k InboxKey) error {
	log := w.Log.With("worker", w.Name, "provider", k.Provider, "dedup_key", k.DedupKey)
	if w.Postback != nil {
		verified, err := w.verify(ctx, k)
		if errors.Is(err, ErrRawErased) {
			// Nothing left to post back: it can never be verified.
			return w.fail(ctx, log, k, err)
		}
		if err != nil {
			log.Warn("postback failed; will retry", "error", err)
			_, rerr := w.Queue.Retry(ctx, k, w.Interval, err, 0)
			return rerr
		}
		if !verified {
			log.Warn("postback answered INVALID: kept, never posted")
			return w.Service.journal.Do(ctx, func(tx Tx) error {
				_, err := tx.SetStatus(ctx, k, w.Status, StatusInvalid)
				return err
			})
		}
	}
	res, err := w.Service.Redrive(ctx, k, w.Status)
	if err != nil {
		// A store that cannot be reached is retried for as long as it takes;
		// any other error (a decision that fails) only MaxDriveAttempts
		// times, then the row is marked failed with its error.
		failAfter := w.Service.opts.MaxDriveAttempts
		if errors.Is(err, eventstore.ErrUnavailable) {
			failAfter = 0
		}
		failed, rerr := w.Queue.Retry(ctx, k, w.Interval, err, failAfter)
		if rerr != nil {
			return errors.Join(err, rerr)
		}
		if failed {
			log.Error("re-drive failed too often: row marked failed; re-drive it after a fix", "error", err)
			return nil
		}
		log.Warn("re-drive failed; will retry", "error", err)
		return fmt.Errorf("re-drive %s/%s: %w", k.Provider, k.DedupKey, err)
	}
	log.Info("inbox row applied", "outcome", res.Outcome, "stream", res.StreamID, "appended", res.Appended)
	return nil
}

// fail marks row k failed at once, with cause.
func (w *Worker) fail(ctx context.Context, log *slog.Logger, k InboxKey, cause error) error {
	log.Error("inbox row cannot be driven: marked failed", "error", cause)
	_, err := w.Queue.Retry(ctx, k, w.Interval, cause, 1)
	return err
}

// verify asks the provider about a held row still in the worker's status
// (true when it is not: someone else drove it, and Redrive finds out).
func (w *Worker) verify(ctx context.Context, k InboxKey) (bool, error) {
	var raw []byte
	var status string
	err := w.Service.journal.Do(ctx, func(tx Tx) error {
		ev, st, err := tx.Load(ctx, k)
		raw, status = ev.Raw, st
		return err
	})
	if err != nil || status != w.Status {
		return true, err
	}
	if raw == nil {
		return false, fmt.Errorf("%s/%s: %w", k.Provider, k.DedupKey, ErrRawErased)
	}
	return w.Postback.Verify(ctx, raw)
}
