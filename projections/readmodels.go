package projections

import (
	"context"
	"strings"

	"github.com/onceledger/onceledger/domain/payment"
)

// Streams the projections tell apart (delivery.Event.StreamID).
const (
	paymentStreamPrefix = "payment-"
)

// Payments is the per-payment summary projection (payments table). Payout
// streams do not touch it.
func Payments() Projection { return paymentsProjection{} }

type paymentsProjection struct{}

func (paymentsProjection) Name() string     { return NamePayments }
func (paymentsProjection) Tables() []string { return []string{"payments"} }

func (paymentsProjection) Apply(ctx context.Context, w Writer, batch []Envelope) error {
	var streams []string
	seen := map[string]bool{}
	for _, env := range batch {
		s := env.Recorded.StreamID
		if strings.HasPrefix(s, paymentStreamPrefix) && !seen[s] {
			seen[s] = true
			streams = append(streams, s)
		}
	}
	if len(streams) == 0 {
		return nil
	}
	stored, err := w.Payments(ctx, streams)
	if err != nil {
		return err
	}
	rows := make(map[string]*PaymentRow, len(streams))
	for s, r := range stored {
		rows[s] = &r
	}
	changed := map[string]bool{}
	for _, env := range batch {
		s := env.Recorded.StreamID
		if !seen[s] {
			continue
		}
		r, ok := rows[s]
		if !ok {
			m := env.Event.Metadata()
			if m.Provider == "" || m.PaymentKey == "" {
				return poison("event %s of %s names no provider or payment", env.Recorded.ID, s)
			}
			r = &PaymentRow{Provider: m.Provider, PaymentID: m.PaymentKey, StreamID: s}
			rows[s] = r
		} else if env.Recorded.Version <= r.Version {
			continue // applied before: a replayed batch
		}
		r.Summary.Apply(env.Event)
		r.Version = env.Recorded.Version
		r.UpdatedAt = env.Recorded.RecordedAt
		changed[s] = true
	}
	out := make([]PaymentRow, 0, len(changed))
	for _, s := range streams {
		if changed[s] {
			r := rows[s]
			r.Status = r.Summary.Status()
			out = append(out, *r)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return w.UpsertPayments(ctx, out)
}

// Reconciliation is the reconciliation items projection: Flagged opens an
// item, Cleared resolves it.
func Reconciliation() Projection { return reconciliationProjection{} }

type reconciliationProjection struct{}

func (reconciliationProjection) Name() string     { return NameReconciliation }
func (reconciliationProjection) Tables() []string { return []string{"reconciliation_items"} }

func (reconciliationProjection) Apply(ctx context.Context, w Writer, batch []Envelope) error {
	var changes []ReconciliationChange
	for _, env := range batch {
		var c ReconciliationChange
		switch e := env.Event.(type) {
		case payment.Flagged:
			c = ReconciliationChange{Kind: e.Kind, Key: e.Key, Details: e.Details, Open: true}
		case payment.Cleared:
			c = ReconciliationChange{Kind: e.Kind, Key: e.Key, Details: e.Details}
		default:
			continue
		}
		m := env.Event.Metadata()
		c.StreamID = env.Recorded.StreamID
		c.Provider = m.Provider
		c.PaymentID = m.PaymentKey
		c.At = env.Recorded.RecordedAt
		c.EventID = env.Recorded.ID
		changes = append(changes, c)
	}
	if len(changes) == 0 {
		return nil
	}
	return w.ApplyReconciliation(ctx, changes)
}
