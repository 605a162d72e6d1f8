package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/onceledger/onceledger/domain/delivery"
)

// InboxKey names one inbox row.
type InboxKey struct {
	Provider string
	DedupKey string
}

// Inbox statuses a worker drives rows through.
const (
	StatusReceived   = "received"
	StatusApplied    = "applied"
	StatusUnverified = "unverified"
	StatusInvalid    = "invalid"
)

// HeldInbox is the part of the inbox a worker needs.
type HeldInbox interface {
	// Claim leases due rows of provider ("" = any) in status.
	Claim(ctx context.Context, providerName, status string, olderThan, lease time.Duration, limit int) ([]InboxKey, error)
	Load(ctx context.Context, k InboxKey) (delivery.Event, string, error)
	SetStatus(ctx context.Context, k InboxKey, from, to string) (bool, error)
	// Retry schedules the next attempt after base·2^(attempts−1), capped.
	Retry(ctx context.Context, k InboxKey, base time.Duration, cause error) error
}

// Redriver applies a stored row whose facts are not in the stream yet.
type Redriver interface {
	Redrive(ctx context.Context, k InboxKey, from string, d Decider) (Result, error)
}

// Postback verifies a delivery with its provider (PayPal IPN): true for
// VERIFIED, false for INVALID, an error when the answer was neither (retry).
type Postback interface {
	Verify(ctx context.Context, raw []byte) (bool, error)
}

// Worker re-drives inbox rows that were stored before their facts were
// recorded: PayPal IPN messages waiting for their postback (Postback set),
// or rows an EventStoreDB append left in "received" when the process died
// between the inbox commit and the append. All its state is in the inbox, so
// it survives restarts, and leases let several instances share the work.
type Worker struct {
	Name     string // for logs
	Inbox    HeldInbox
	Redriver Redriver
	Decider  Decider
	Provider string   // "" = every provider
	Status   string   // the status of rows to drive
	Postback Postback // nil: apply without verification
	// OlderThan: only rows first seen longer ago (a row still in its first
	// request's hands is not the sweeper's). Lease: how long a claimed row is
	// left alone. Interval: pause between empty polls.
	OlderThan, Lease, Interval time.Duration
	Log                        *slog.Logger
}

// Run polls until ctx ends.
func (w *Worker) Run(ctx context.Context) error {
	if w.Interval <= 0 {
		w.Interval = time.Second
	}
	if w.Lease <= 0 {
		w.Lease = time.Minute
	}
	if w.Log == nil {
		w.Log = slog.Default()
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

// Once drives one batch of due rows and returns how many it claimed.
func (w *Worker) Once(ctx context.Context) (int, error) {
	keys, err := w.Inbox.Claim(ctx, w.Provider, w.Status, w.OlderThan, w.Lease, 50)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, k := range keys {
		if err := w.drive(ctx, k); err != nil {
			errs = append(errs, err)
		}
	}
	return len(keys), errors.Join(errs...)
}

func (w *Worker) drive(ctx context.Context, k InboxKey) error {
	log := w.Log.With("worker", w.Name, "provider", k.Provider, "dedup_key", k.DedupKey)
	if w.Postback != nil {
		ev, status, err := w.Inbox.Load(ctx, k)
		if err != nil {
			return err
		}
		if status != w.Status {
			return nil
		}
		ok, err := w.Postback.Verify(ctx, ev.Raw)
		if err != nil {
			log.Warn("postback failed; will retry", "error", err)
			return w.Inbox.Retry(ctx, k, w.Interval, err)
		}
		if !ok {
			log.Warn("postback answered INVALID: kept, never posted")
			_, err := w.Inbox.SetStatus(ctx, k, w.Status, StatusInvalid)
			return err
		}
	}
	res, err := w.Redriver.Redrive(ctx, k, w.Status, w.Decider)
	if err != nil {
		log.Warn("re-drive failed; will retry", "error", err)
		if rerr := w.Inbox.Retry(ctx, k, w.Interval, err); rerr != nil {
			return errors.Join(err, rerr)
		}
		return fmt.Errorf("re-drive %s/%s: %w", k.Provider, k.DedupKey, err)
	}
	log.Info("inbox row applied", "outcome", res.Outcome, "stream", res.StreamID, "appended", res.Appended)
	return nil
}
