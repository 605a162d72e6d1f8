package projections

import (
	"context"

	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/domain/settlement"
)

// Payouts is the settlement projection: every recorded settlement line into
// settlement_lines, and the payouts they were paid out in, with the payout
// webhooks and payout lines, into payouts. A payout reported by a webhook
// and by a report is one row (keyed by provider and payout id). Its status
// says whether its lines prove it: reconciled when their nets sum to its
// amount, mismatch (with the difference) when not.
func Payouts() Projection { return payoutsProjection{} }

type payoutsProjection struct{}

func (payoutsProjection) Name() string { return NamePayouts }
func (payoutsProjection) Tables() []string {
	return append([]string{"settlement_lines", "payouts"}, bankTables...) // bank.go
}

func (payoutsProjection) Apply(ctx context.Context, w Writer, batch []Envelope) error {
	var (
		lines   []SettlementLineRow
		changes []PayoutChange
	)
	// Lines and payout facts are written in feed order, in two runs: a
	// payout's status depends only on the totals, not on the order.
	for _, env := range batch {
		if env.Event == nil {
			continue // the periods stream: nothing about payouts
		}
		m := env.Event.Metadata()
		at := m.OccurredAt
		if at.IsZero() {
			at = env.Recorded.RecordedAt
		}
		switch e := env.Event.(type) {
		case payment.LineSettled:
			lines = append(lines, lineRow(e.Line, env.Recorded.StreamID))
		case payment.PayoutPaid:
			changes = append(changes, PayoutChange{Provider: m.Provider, PayoutID: e.PayoutID, Paid: true,
				Amount: e.Amount, Currency: string(e.Currency), At: at, Arrival: e.ArrivalDate, TraceID: e.TraceID, Descriptor: e.Descriptor})
		case payment.PayoutTraced:
			changes = append(changes, PayoutChange{Provider: m.Provider, PayoutID: e.PayoutID, Traced: true, At: at,
				TraceID: e.TraceID, Descriptor: e.Descriptor})
		case payment.PayoutFailed:
			changes = append(changes, PayoutChange{Provider: m.Provider, PayoutID: e.PayoutID, Failed: true,
				Amount: e.Amount, Currency: string(e.Currency), At: at})
		}
	}
	if len(lines) > 0 {
		if err := w.InsertSettlementLines(ctx, lines); err != nil {
			return err
		}
	}
	if err := applyBank(ctx, w, batch); err != nil { // bank.go
		return err
	}
	if len(changes) > 0 {
		return w.ApplyPayouts(ctx, changes)
	}
	return nil
}

func lineRow(l settlement.Line, stream string) SettlementLineRow {
	return SettlementLineRow{
		Provider: l.Provider, LineKey: l.DedupKey(), Kind: string(l.Kind), SourceType: l.SourceType, LineID: l.LineID,
		PaymentID: l.PaymentKey, CaptureID: l.CaptureID, RefundID: l.RefundID, DisputeID: l.DisputeID,
		Gross: l.Gross, Fee: l.Fee, Net: l.Net, Currency: string(l.Currency),
		OriginalAmount: l.OriginalAmount, OriginalCurrency: string(l.OriginalCurrency), ExchangeRate: l.ExchangeRate,
		PayoutID: l.PayoutID, OccurredAt: l.OccurredAt, AvailableOn: l.AvailableOn, StreamID: stream,
	}
}
