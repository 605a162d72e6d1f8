package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/delivery"
)

// Renormalizer re-normalizes a stored delivery's raw bytes with the
// current code of its provider adapter, without verifying a signature: the
// row was verified when it arrived, and the bytes are the ones verified.
// dedupKey is the row's key, for schemes whose key travels outside the body
// (Standard Webhooks' webhook-id header). Each provider adapter has one.
type Renormalizer interface {
	Renormalize(dedupKey string, raw []byte) (delivery.Event, error)
}

// RedriveFilter selects the inbox rows a redrive re-normalizes: the listed
// Keys, or every row matching the other fields. Status is "ignored" (the
// default: a type the code did not handle then may be handled now) or
// "received".
type RedriveFilter struct {
	Provider string
	Type     string
	Status   string
	From, To time.Time // first seen in [From, To); zero: unbounded
	Keys     []InboxKey
}

// RedriveRow is one selected row: its raw body, nil when it was erased.
type RedriveRow struct {
	Key InboxKey
	Raw []byte
}

// RedriveSource lists the rows a filter selects, in (provider, dedup key)
// order, up to limit rows after after (nil: from the start).
type RedriveSource interface {
	Redrivable(ctx context.Context, f RedriveFilter, after *InboxKey, limit int) ([]RedriveRow, error)
}

// RedriveCounts is what a redrive did.
type RedriveCounts struct {
	Selected int `json:"selected"` // rows the filter matched
	Recorded int `json:"recorded"` // now carry facts, recorded in their stream
	Ignored  int `json:"ignored"`  // still a type the current code does not handle
	Erased   int `json:"erased"`   // not re-drivable: the raw body was erased (retention)
	Skipped  int `json:"skipped"`  // moved on meanwhile (another redrive, the sweeper)
	Failed   int `json:"failed"`   // could not be re-normalized (see the log), or no adapter
}

// ErrBadRedrive: a redrive request that cannot be run (an unknown status).
var ErrBadRedrive = errors.New("bad redrive request")

// Redriver re-drives stored deliveries with the current code (`onceledger
// redrive`, POST /v1/inbox/redrive, the console): each selected row's raw
// body is re-normalized by its provider's adapter and what it now carries
// is recorded through the same record algorithm as a first arrival, with
// the actor on the inbox row.
type Redriver struct {
	svc    *Service
	source RedriveSource
	norm   map[string]Renormalizer
	log    *slog.Logger
}

// NewRedriver returns a Redriver over svc, reading rows from source and
// re-normalizing them with norm (provider name → adapter; a row of a
// provider without one counts as failed).
func NewRedriver(svc *Service, source RedriveSource, norm map[string]Renormalizer, log *slog.Logger) *Redriver {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Redriver{svc: svc, source: source, norm: norm, log: log}
}

// redriveBatch is how many rows (with their raw bodies) are read at once.
const redriveBatch = 200

// Redrive re-drives every row f selects, as actor.
func (r *Redriver) Redrive(ctx context.Context, f RedriveFilter, actor string) (RedriveCounts, error) {
	var c RedriveCounts
	switch f.Status {
	case "":
		f.Status = StatusIgnored
	case StatusIgnored, StatusReceived:
	default:
		return c, fmt.Errorf("%w: status %q: only %s or %s deliveries are re-driven", ErrBadRedrive, f.Status, StatusIgnored, StatusReceived)
	}
	if actor == "" {
		return c, fmt.Errorf("%w: no actor", ErrBadRedrive)
	}
	var after *InboxKey
	for {
		rows, err := r.source.Redrivable(ctx, f, after, redriveBatch)
		if err != nil {
			return c, err
		}
		for _, row := range rows {
			c.Selected++
			if err := r.one(ctx, row, f.Status, actor, &c); err != nil {
				return c, err
			}
		}
		if len(rows) < redriveBatch {
			return c, nil
		}
		after = &rows[len(rows)-1].Key
	}
}

// one re-drives one row. Only an error that stops the whole redrive (the
// storage is unavailable) is returned; a row that cannot be re-normalized
// is counted and logged.
func (r *Redriver) one(ctx context.Context, row RedriveRow, status, actor string, c *RedriveCounts) error {
	k := row.Key
	if row.Raw == nil {
		c.Erased++
		return nil
	}
	norm, ok := r.norm[k.Provider]
	if !ok {
		c.Failed++
		r.log.Warn("redrive: provider not configured", "provider", k.Provider, "dedup_key", k.DedupKey)
		return nil
	}
	ev, err := norm.Renormalize(k.DedupKey, row.Raw)
	if err == nil && (ev.Provider != k.Provider || ev.DedupKey != k.DedupKey) {
		err = fmt.Errorf("re-normalized as %s/%s", ev.Provider, ev.DedupKey)
	}
	if err == nil {
		err = ev.Validate()
	}
	if err != nil {
		c.Failed++
		r.log.Warn("redrive: cannot re-normalize", "provider", k.Provider, "dedup_key", k.DedupKey, "error", err)
		return nil
	}
	res, err := r.svc.Renormalized(ctx, k, status, ev, actor)
	if err != nil {
		if isStop(err) {
			return err
		}
		c.Failed++
		r.log.Warn("redrive: cannot record", "provider", k.Provider, "dedup_key", k.DedupKey, "error", err)
		return nil
	}
	switch res.Outcome {
	case Accepted:
		c.Recorded++
	case Ignored:
		c.Ignored++
	default:
		c.Skipped++
	}
	r.log.Info("redriven", "provider", k.Provider, "dedup_key", k.DedupKey, "outcome", res.Outcome, "actor", actor)
	return nil
}

// Renormalized records what the stored row k (in status from) carries
// when its raw body is normalized by the current code (ev): the row's
// normalized facts are replaced, with the actor, and, unless ev is still
// ignored, its facts are decided on the stream and appended, as for a
// first arrival. A row no longer in status from was moved on by someone
// else: Duplicate, nothing done.
func (s *Service) Renormalized(ctx context.Context, k InboxKey, from string, ev delivery.Event, actor string) (Result, error) {
	if err := ev.Validate(); err != nil {
		return Result{}, err
	}
	return s.retry(ctx, k.Provider, k.Provider+"/"+k.DedupKey, func() (res Result, err error) {
		err = s.journal.Do(ctx, func(tx Tx) error {
			res, err = s.renormalizeOnce(ctx, tx, k, from, ev, actor)
			return err
		})
		return res, err
	})
}

func (s *Service) renormalizeOnce(ctx context.Context, tx Tx, k InboxKey, from string, ev delivery.Event, actor string) (Result, error) {
	if _, status, err := tx.Load(ctx, k); err != nil || status != from {
		return Result{Outcome: Duplicate}, err
	}
	to := StatusReceived
	switch {
	case ev.Ignored():
		to = StatusIgnored
	case s.journal.Atomic():
		to = StatusApplied
	}
	if ok, err := tx.Renormalize(ctx, k, ev, from, to, actor); err != nil || !ok {
		return Result{Outcome: Duplicate}, err
	}
	if ev.Ignored() {
		return Result{Outcome: Ignored}, nil
	}
	res, err := s.apply(ctx, tx, ev, nil)
	if err != nil {
		return Result{}, err
	}
	if to != StatusApplied {
		if _, err := tx.SetStatus(ctx, k, to, StatusApplied); err != nil {
			return Result{}, err
		}
	}
	return res, nil
}

// isStop reports errors that end a whole redrive rather than one row.
func isStop(err error) bool {
	return errors.Is(err, eventstore.ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
