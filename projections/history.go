package projections

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/domain/period"
	"github.com/onceledger/onceledger/projections/views"
)

// PaymentRows reads one payment's read-model row (readmodel.Store).
type PaymentRows interface {
	Payment(ctx context.Context, provider, paymentID string) (views.Payment, bool, error)
}

// StreamReader reads one stream of the configured event store (any
// eventstore.Store).
type StreamReader interface {
	ReadStream(ctx context.Context, stream string) ([]eventstore.RecordedEvent, error)
}

// PaymentHistory is the one query of a payment both front ends show (GET
// /v1/payments/{provider}/{payment_id} and the console's timeline): the
// summary from the payments read model and the events of its stream from
// the event store (none when streams is nil). When the read model does not
// have the payment yet, or is behind the stream (the projector lags), the
// summary is folded from the events with the projection's own fold
// (FoldPayment), so that it is consistent with the events it comes with.
// found is false when neither knows the payment. The summary's Fees, and
// h.Fees per currency, are the stream's postings to expenses:fees:* (the
// ledger's entries), settlement fees included, whenever the events were
// read.
func PaymentHistory(ctx context.Context, rows PaymentRows, streams StreamReader, provider, paymentID string) (views.PaymentHistory, bool, error) {
	var h views.PaymentHistory
	p, found, err := rows.Payment(ctx, provider, paymentID)
	if err != nil {
		return h, false, err
	}
	stream := delivery.PaymentStream(provider, paymentID)
	if found {
		stream = p.StreamID
	}
	if streams != nil {
		if h.Events, err = streams.ReadStream(ctx, stream); err != nil {
			return h, false, err
		}
	}
	if n := len(h.Events); n > 0 && (!found || h.Events[n-1].Version > p.Version) {
		if p, found, err = FoldPayment(h.Events); err != nil {
			return h, false, fmt.Errorf("payment %s: %w", stream, err)
		}
	}
	h.Payment = p
	if streams != nil {
		// The ledger's fee, not the fold's: the fold counts only the fees
		// webhooks carried, the entries also those a settlement report
		// posted.
		h.Fees = ledgerFees(h.Events)
		h.Payment.Summary.Fees = h.Fee(string(h.Payment.Summary.Currency))
	}
	return h, found, nil
}

// ledgerFees sums the postings to expenses:fees:* of events per currency,
// with the postings the ledger projection books for them (payment.Postings),
// so that a payment's fee is the one its entries carry, settlement fees
// included. Events the payment codec does not know post nothing here, as
// they post nothing in the ledger.
func ledgerFees(events []eventstore.RecordedEvent) []views.CurrencyAmount {
	sums := map[string]int64{}
	for _, r := range events {
		e, err := payment.Decode(r.Type, r.Data)
		if err != nil {
			continue
		}
		for _, p := range payment.Postings(e) {
			if strings.HasPrefix(p.Account, feeAccounts) {
				sums[string(p.Currency)] += p.Amount
			}
		}
	}
	var out []views.CurrencyAmount
	for c, n := range sums {
		if n != 0 {
			out = append(out, views.CurrencyAmount{Currency: c, Amount: n})
		}
	}
	slices.SortFunc(out, func(a, b views.CurrencyAmount) int { return strings.Compare(a.Currency, b.Currency) })
	return out
}

// feeAccounts is the prefix of every provider's fee account
// (ledger.ProviderFees).
var feeAccounts = ledger.ProviderFees("")

// PeriodHistory is every close and reopen of the accounting periods, in
// the order they happened, read from the periods stream (period.StreamID):
// who, when and why, beyond the last of each that the periods read model
// keeps.
func PeriodHistory(ctx context.Context, streams StreamReader) ([]views.PeriodAction, error) {
	events, err := streams.ReadStream(ctx, period.StreamID)
	if err != nil {
		return nil, err
	}
	var out []views.PeriodAction
	for _, r := range events {
		e, err := period.Decode(r.Type, r.Data)
		if err != nil {
			return nil, fmt.Errorf("periods stream, version %d: %w", r.Version, err)
		}
		switch e := e.(type) {
		case period.Closed:
			out = append(out, views.PeriodAction{Period: e.Period, Action: views.PeriodClosed, Actor: e.Actor, Note: e.Note, At: e.At})
		case period.Reopened:
			out = append(out, views.PeriodAction{Period: e.Period, Action: "reopened", Actor: e.Actor, Note: e.Reason, At: e.At})
		}
	}
	return out, nil
}
