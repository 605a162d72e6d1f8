package ingest

import (
	"context"
	"fmt"
	"strings"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/delivery"
)

// Held deliveries (PayPal IPN) carry no signature: anyone who knows a
// transaction id can post a message with that id before the provider's own
// one. So an unverified delivery never takes its dedup key. It is kept as a
// candidate under a key of its own, its dedup key + CandidateMarker + the
// hash of its bytes, and the verifier promotes the first candidate its
// provider confirms to the real dedup key (recorded there like any verified
// delivery; the candidate row becomes "verified"). A forged candidate is
// answered INVALID and stays "invalid", next to the genuine one: it cannot
// pre-empt it, whichever arrives first (issue 13).
//
// Floods are bounded. A dedup key has at most HoldOptions.PerKey candidates
// waiting and all candidates together at most PendingBytes of raw bodies;
// past either bound, a delivery is not queued but verified on the spot,
// inside its request: a genuine one is recorded at once (so a flood never
// delays it behind the queue), a forged one is dropped, unstored. The queue
// itself is therefore short, and the verifier works through it with
// several postbacks in flight (Worker.Parallel).

// CandidateMarker separates a candidate's dedup key from its payload hash.
const CandidateMarker = "|unverified:"

// StatusVerified: a candidate its provider confirmed; its facts were
// recorded under the real dedup key, in that key's row.
const StatusVerified = "verified"

// CandidateKey is the inbox key of an unverified candidate for dedupKey.
func CandidateKey(dedupKey, payloadHash string) string {
	return dedupKey + CandidateMarker + payloadHash
}

// CandidateOf returns the real dedup key of a candidate's key; false when
// key is not a candidate's.
func CandidateOf(key string) (string, bool) {
	real, _, ok := strings.Cut(key, CandidateMarker)
	return real, ok
}

// Pending counts the candidates waiting for verification.
type Pending interface {
	// PendingCandidates returns how many candidates of dedupKey are
	// waiting ("unverified"), and the raw bytes of all of provider's.
	PendingCandidates(ctx context.Context, provider, dedupKey string) (perKey int, bytes int64, err error)
}

// HoldOptions bound the candidates of held deliveries. Without Pending or
// Postback there is no bound.
type HoldOptions struct {
	Pending  Pending
	Postback Postback
	// PerKey: candidates waiting per dedup key before further ones are
	// verified inline. Default 4 (PayPal resends one message with the same
	// bytes, which is one candidate).
	PerKey int
	// PendingBytes: raw bytes of all waiting candidates before further ones
	// are verified inline. Default 1 MiB.
	PendingBytes int64
}

func (o HoldOptions) withDefaults() HoldOptions {
	if o.PerKey <= 0 {
		o.PerKey = 4
	}
	if o.PendingBytes <= 0 {
		o.PendingBytes = 1 << 20
	}
	return o
}

// Hold validates ev and stores it durably as an unverified candidate,
// without applying it: the delivery carries no signature (PayPal IPN) and is
// promoted by the verifier (Workers) only once its provider confirmed it.
// Past the flood bounds (HoldOptions) it is verified inline instead: a
// confirmed delivery is recorded (Accepted or Duplicate), an unconfirmed one
// is dropped (Ignored, nothing stored); a postback that gets no answer is an
// eventstore.ErrUnavailable error (503: the provider retries).
func (s *Service) Hold(ctx context.Context, ev delivery.Event) (Result, error) {
	if err := ev.Validate(); err != nil {
		return Result{}, err
	}
	if _, isCandidate := CandidateOf(ev.DedupKey); isCandidate {
		return Result{}, fmt.Errorf("%w: dedup key %q contains %q", delivery.ErrMalformed, ev.DedupKey, CandidateMarker)
	}
	// The count and the insert are not one transaction: concurrent requests
	// may each see room, so the bounds hold up to the provider's in-flight
	// cap (httpapi's ProviderConcurrency) more candidates, still bounded.
	if h := s.opts.Hold; h.Pending != nil && h.Postback != nil {
		perKey, bytes, err := h.Pending.PendingCandidates(ctx, ev.Provider, ev.DedupKey)
		if err != nil {
			return Result{}, err
		}
		if perKey >= h.PerKey || bytes+int64(len(ev.Raw)) > h.PendingBytes {
			return s.verifyInline(ctx, ev)
		}
	}
	cand := ev
	cand.DedupKey = CandidateKey(ev.DedupKey, ev.PayloadHash)
	return s.record(ctx, cand, true)
}

func (s *Service) verifyInline(ctx context.Context, ev delivery.Event) (Result, error) {
	ok, err := s.opts.Hold.Postback.Verify(ctx, ev.Raw)
	if err != nil {
		return Result{}, fmt.Errorf("%w: verifying %s inline: %w", eventstore.ErrUnavailable, ev.DedupKey, err)
	}
	if !ok {
		return Result{Outcome: Ignored}, nil
	}
	return s.Ingest(ctx, ev)
}

// promote records a confirmed candidate's delivery under its real dedup key
// (a first arrival, or a duplicate of a confirmed one before it) and marks
// the candidate verified, in one unit of work where the journal has them.
func (s *Service) promote(ctx context.Context, tx Tx, k InboxKey, real string, ev delivery.Event) (Result, error) {
	ev.DedupKey = real
	res, err := s.recordOnce(ctx, tx, ev, false)
	if err != nil {
		return Result{}, err
	}
	if _, err := tx.SetStatus(ctx, k, StatusUnverified, StatusVerified); err != nil {
		return Result{}, err
	}
	return res, nil
}
