package projections

import (
	"context"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections/views"
)

// Payments is the per-payment summary projection (payments table). Payout
// streams do not touch it.
func Payments() Projection { return paymentsProjection{} }

type paymentsProjection struct{}

func (paymentsProjection) Name() string { return NamePayments }

// partitions: each payments row is the fold of one stream (streamLocal).
func (paymentsProjection) partitions() int  { return 2 }
func (paymentsProjection) Tables() []string { return []string{"payments", "payment_ids"} }

func (paymentsProjection) Apply(ctx context.Context, w Writer, batch []Envelope) error {
	var streams []string
	seen := map[string]bool{}
	for _, env := range batch {
		s := env.Recorded.StreamID
		if strings.HasPrefix(s, delivery.PaymentStreamPrefix) && !seen[s] {
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
	if err := w.IndexPaymentIDs(ctx, paymentIDs(batch, seen)); err != nil { // paymentids.go
		return err
	}
	changed := map[string]bool{}
	for _, env := range batch {
		s := env.Recorded.StreamID
		if !seen[s] {
			continue
		}
		r, ok := rows[s]
		if !ok {
			r = &PaymentRow{}
			rows[s] = r
		}
		applied, err := foldPaymentEvent(r, env)
		if err != nil {
			return err
		}
		changed[s] = changed[s] || applied
	}
	out := make([]PaymentRow, 0, len(changed))
	for _, s := range streams {
		if changed[s] {
			out = append(out, *rows[s])
		}
	}
	if len(out) == 0 {
		return nil
	}
	return w.UpsertPayments(ctx, out)
}

// foldPaymentEvent is the payments projection's step: it applies one event
// of a payment stream to the stream's row (a zero row for a stream not seen
// before), unless the row has it already (a replayed batch), and reports
// whether it did.
func foldPaymentEvent(r *PaymentRow, env Envelope) (bool, error) {
	if r.StreamID == "" {
		m := env.Event.Metadata()
		if m.Provider == "" || m.PaymentKey == "" {
			return false, poison("event %s of %s names no provider or payment", env.Recorded.ID, env.Recorded.StreamID)
		}
		*r = PaymentRow{Provider: m.Provider, PaymentID: m.PaymentKey, StreamID: env.Recorded.StreamID}
	} else if env.Recorded.Version <= r.Version {
		return false, nil
	}
	r.Summary.Apply(env.Event)
	r.Status = r.Summary.Status()
	r.Version = env.Recorded.Version
	r.UpdatedAt = env.Recorded.RecordedAt
	return true, nil
}

// FoldPayment folds a payment stream's events (in version order) into the
// row the payments projection would write for it: the API answers with it
// when the read model has not caught up with the stream yet. found is false
// when there are no events.
func FoldPayment(events []eventstore.RecordedEvent) (p views.Payment, found bool, err error) {
	envs, err := decode(NamePayments, events)
	if err != nil {
		return views.Payment{}, false, err
	}
	for _, env := range envs {
		if _, err := foldPaymentEvent(&p, env); err != nil {
			return views.Payment{}, false, err
		}
	}
	return p, len(envs) > 0, nil
}

// Reconciliation is the reconciliation items projection: Flagged opens an
// item, Cleared resolves it; an operator's Resolved resolves it and
// Reopened opens it again, each with its actor and note.
func Reconciliation(opts ...Option) Projection {
	return reconciliationProjection{zone: configure(opts).zone}
}

type reconciliationProjection struct {
	zone *time.Location // the reporting zone: provider days (providerdays.go)
}

func (reconciliationProjection) Name() string { return NameReconciliation }

// partitions: each item belongs to one stream (streamLocal); its events
// are few, one lane is enough.
func (reconciliationProjection) partitions() int { return 1 }
func (reconciliationProjection) Tables() []string {
	return []string{"reconciliation_items", "balance_assertions", "balance_movements", "ledger_actors", "provider_days", "item_days", "day_facts", "batch_links"}
}

func (r reconciliationProjection) Apply(ctx context.Context, w Writer, batch []Envelope) error {
	var changes []ReconciliationChange
	// Provider balances (assertions.go): the pass writes its own item
	// changes, after the ones collected so far.
	bal := &balancePass{w: w, flush: func(ctx context.Context) error {
		if len(changes) == 0 {
			return nil
		}
		err := w.ApplyReconciliation(ctx, changes)
		changes = changes[:0]
		return err
	}}
	if err := bal.prepare(ctx, batch); err != nil {
		return err
	}
	days := &dayPass{zone: r.zone} // providerdays.go
	for i, env := range batch {
		if err := bal.apply(ctx, i, env); err != nil {
			return err
		}
		days.add(env)
		var c ReconciliationChange
		switch e := env.Event.(type) {
		case payment.Flagged:
			c = ReconciliationChange{Kind: e.Kind, Key: e.Key, Details: payment.PublicDetails(e.Kind, e.Key, e.Details), Open: true}
		case payment.Cleared:
			c = ReconciliationChange{Kind: e.Kind, Key: e.Key, Details: payment.PublicDetails(e.Kind, e.Key, e.Details)}
		case payment.Resolved:
			c = ReconciliationChange{Kind: e.Kind, Key: e.Key, Actor: e.Actor, Note: e.Note}
		case payment.Reopened:
			c = ReconciliationChange{Kind: e.Kind, Key: e.Key, Actor: e.Actor, Note: e.Note, Open: true}
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
	if err := bal.store(ctx); err != nil {
		return err
	}
	if err := days.flush(ctx, w); err != nil {
		return err
	}
	if len(changes) == 0 {
		return nil
	}
	return w.ApplyReconciliation(ctx, changes)
}
