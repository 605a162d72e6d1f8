package payment

import (
	"fmt"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/settlement"
)

// Settlement lines tied to no payment join the payout stream of their
// payout (delivery.Event.StreamID): the payout line itself, the fees and
// adjustments deducted from it, conversion legs. A payout line and the
// payout.paid webhook are two reports of one payout, recorded once whichever
// comes first (missing_webhook when the line comes first, cleared by the
// webhook; settlement_mismatch when the amounts differ; the first stands).
// Likewise a returned payout line (Stripe payout_reversal) and the
// payout.failed webhook are two reports of one failure: either records
// PayoutFailed, once, and the other adds nothing, so the payout is reversed
// once whichever source reports it first.

// payoutSettle is what the payout aggregate remembers about settlement.
type payoutSettle struct {
	open    map[reconKey]bool // open items
	counted map[string]int64  // lines counted (PayoutLinesCounted): key → net
	// sums and counts: the counted lines' nets and number, by the currency
	// of their lines (PayoutLinesCounted.Currency): a payout is proven only
	// by its lines in its own currency; a line in another never reconciles
	// it (CONTRACT, payout_mismatch).
	sums   map[money.Currency]int64
	counts map[money.Currency]int
	over   bool // a sum left int64 (never with real reports)
}

func (po *payout) applySettled(e Event) {
	s := &po.settle
	if s.open == nil {
		s.open = map[reconKey]bool{}
		s.counted = map[string]int64{}
		s.sums = map[money.Currency]int64{}
		s.counts = map[money.Currency]int{}
	}
	switch e := e.(type) {
	case PayoutLinesCounted:
		for _, l := range e.Lines {
			if _, ok := s.counted[l.Key]; ok {
				continue
			}
			s.counted[l.Key] = l.Net
			s.counts[e.Currency]++
			if v, err := money.Add(s.sums[e.Currency], l.Net); err == nil {
				s.sums[e.Currency] = v
			} else {
				s.over = true
			}
		}
	case Flagged:
		s.open[reconKey{e.Kind, e.Key}] = true
	case Cleared:
		delete(s.open, reconKey{e.Kind, e.Key})
	}
}

// decideSettled decides a settlement line in a payout stream.
func (po *payout) decideSettled(in delivery.Event) ([]Event, error) {
	l := in.SettledLine()
	if l == nil {
		return nil, fmt.Errorf("%w: settled fact without its line", delivery.ErrMissingField)
	}
	if po.applied[in.DedupKey] {
		return nil, nil
	}
	meta := Meta{Provider: in.Provider, PaymentKey: l.PayoutID, DedupKey: in.DedupKey, OccurredAt: in.OccurredAt}
	var out []Event
	emit := func(e Event) error {
		out = append(out, e)
		return po.apply(e)
	}
	flagOnce := func(kind, key, details string) error {
		if po.flagged[reconKey{kind, key}] {
			return nil
		}
		return emit(Flagged{Meta: meta, Kind: kind, Key: key, Details: details})
	}
	if err := emit(LineSettled{Meta: meta, Line: *l}); err != nil {
		return nil, err
	}
	fee := func(f int64) error {
		if f == 0 {
			return nil
		}
		return emit(FeeSettled{Meta: meta, LineID: l.DedupKey(), Fee: f, Currency: l.Currency})
	}
	var err error
	switch l.Kind {
	case settlement.KindPayout:
		err = po.settlePayout(*l, meta, emit, flagOnce)
		if err == nil {
			err = fee(l.Fee)
		}
	case settlement.KindFee:
		err = fee(-l.Net)
	case settlement.KindFX:
		err = emit(Converted{Meta: meta, LineID: l.DedupKey(), SettledAmount: l.Net, SettledCurrency: l.Currency, ExchangeRate: l.ExchangeRate})
	case settlement.KindAdjustment:
		if l.SourceType == settlement.SourceBalanceGap {
			err = flagOnce(ReconSettlementMismatch, l.DedupKey(), fmt.Sprintf("running balance breaks at line %s: the balance moves %s %s more than the line's amount",
				l.LineID, money.FormatMinor(l.Gross, l.Currency), l.Currency))
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// settlePayout: a payout line with negative gross is the payout paid (its
// amount is −gross; a fee on it posts apart); with positive gross the
// payout came back (failed or canceled after it was paid): the failure, as
// payout.failed would record it (payout.go). A bank debit (positive gross
// marked BankDebit: Square's negative payout) is a payout paid the other
// way: paid, of amount −gross < 0, posted like any payout (bank:payouts
// credited, the balance debited back).
func (po *payout) settlePayout(l settlement.Line, meta Meta, emit func(Event) error, flagOnce func(kind, key, details string) error) error {
	id := l.PayoutID
	first, paid := po.paid[id]
	failure, failed := po.failed[id]
	if l.Gross > 0 && !l.BankDebit {
		if failed {
			return nil // the webhook (or another line) reported the failure
		}
		// The reversal moves what was paid, whatever this line says.
		amount, cur := l.Gross, l.Currency
		if paid {
			amount, cur = first.Amount, first.Currency
		}
		return emit(PayoutFailed{Meta: meta, PayoutID: id, Amount: amount, Currency: cur,
			Reason: "returned (settlement line " + l.DedupKey() + ")", WasPaid: paid})
	}
	amount := -l.Gross
	if !paid && failed {
		// Failed before it was reported paid: a paid report after its
		// failure posts nothing (payout.go), from a line as from a webhook;
		// but no payout.paid webhook reported it, as when the line came
		// first.
		// A failed payout is not judged by which webhooks reported it
		// (closeFailed): no missing_webhook either.
		first = PayoutPaid{PayoutID: id, Amount: failure.Amount, Currency: failure.Currency}
		paid = true
	}
	if !paid {
		// A payout line's AvailableOn is the day its money reaches the bank
		// as the provider states it (Square's Payout arrival_date, Stripe's
		// expanded payout arrival_date): the payout's arrival date.
		if err := emit(PayoutPaid{Meta: meta, PayoutID: id, Amount: amount, Currency: l.Currency,
			ArrivalDate: l.AvailableOn, TraceID: l.PayoutTraceID, Descriptor: l.PayoutDescriptor}); err != nil || l.NoWebhook {
			return err
		}
		return flagOnce(ReconMissingWebhook, id, fmt.Sprintf("payout %s reported by settlement line %s but by no webhook; recorded from the line",
			id, l.DedupKey()))
	}
	if !failed {
		if e := po.traced(meta, delivery.Fact{BusinessID: id, TraceID: l.PayoutTraceID, Descriptor: l.PayoutDescriptor}); e != nil {
			if err := emit(e); err != nil {
				return err
			}
		}
	}
	if first.Amount != amount || first.Currency != l.Currency {
		return flagOnce(ReconSettlementMismatch, id, fmt.Sprintf("payout %s settled as %s %s, recorded as %s %s; the recorded payout stands",
			id, money.FormatMinor(amount, l.Currency), l.Currency, money.FormatMinor(first.Amount, first.Currency), first.Currency))
	}
	return nil
}

// webhookAfterLine handles a payout webhook for a payout a settlement line
// recorded first: it adds nothing, clears missing_webhook, and a different
// amount or currency opens settlement_mismatch. ok is false when the payout
// was not recorded from a line (the webhook rules decide).
func (po *payout) webhookAfterLine(in delivery.Event) (out []Event, ok bool, err error) {
	f := in.Facts[0]
	if f.Kind != delivery.KindPayoutPaid || !po.flagged[reconKey{ReconMissingWebhook, f.BusinessID}] {
		return nil, false, nil
	}
	first := po.paid[f.BusinessID]
	meta := Meta{Provider: in.Provider, PaymentKey: f.BusinessID, DedupKey: in.DedupKey, OccurredAt: in.OccurredAt}
	add := func(e Event) {
		if err == nil {
			out = append(out, e)
			err = po.apply(e)
		}
	}
	if e := po.traced(meta, f); e != nil {
		add(e) // the line knew no trace id: the webhook's is recorded
	}
	if k := (reconKey{ReconMissingWebhook, f.BusinessID}); po.settle.open[k] {
		add(Cleared{Meta: meta, Kind: k.kind, Key: k.key, Details: "the webhook arrived after the settlement line"})
	}
	if k := (reconKey{ReconSettlementMismatch, f.BusinessID}); (f.Amount != first.Amount || f.Currency != first.Currency) && !po.flagged[k] {
		add(Flagged{Meta: meta, Kind: k.kind, Key: k.key, Details: fmt.Sprintf("payout %s reported by webhook as %s %s, settled as %s %s; the settled payout stands",
			f.BusinessID, money.FormatMinor(f.Amount, f.Currency), f.Currency, money.FormatMinor(first.Amount, first.Currency), first.Currency)})
	}
	return out, true, err
}

// decideLines counts the lines of a payout-lines delivery not counted
// before.
func (po *payout) decideLines(in delivery.Event) ([]Event, error) {
	if po.applied[in.DedupKey] {
		return nil, nil
	}
	f := in.Facts[0]
	var fresh []settlement.Counted
	seen := map[string]bool{}
	for _, c := range f.Counted {
		if _, ok := po.settle.counted[c.Key]; ok || seen[c.Key] {
			continue
		}
		seen[c.Key] = true
		fresh = append(fresh, c)
	}
	if len(fresh) == 0 {
		return nil, nil
	}
	e := PayoutLinesCounted{Meta: Meta{Provider: in.Provider, PaymentKey: f.BusinessID, DedupKey: in.DedupKey, OccurredAt: in.OccurredAt},
		PayoutID: f.BusinessID, Currency: f.Currency, Lines: fresh}
	if err := po.apply(e); err != nil {
		return nil, err
	}
	return []Event{e}, nil
}

// checkLines opens payout_mismatch when the lines counted for the payout do
// not sum to its amount, and clears it when they come to: after any
// delivery, since the lines and the amount arrive in any order. A payout
// not reported paid yet (no amount) or failed is not judged.
func (po *payout) checkLines(in delivery.Event, out []Event) ([]Event, error) {
	s := &po.settle
	if len(s.counted) == 0 || len(in.Facts) == 0 {
		return out, nil
	}
	id := payoutIDOf(in)
	paid, ok := po.paid[id]
	k := reconKey{ReconPayoutMismatch, id}
	meta := Meta{Provider: in.Provider, PaymentKey: id, DedupKey: in.DedupKey, OccurredAt: in.OccurredAt}
	if _, failed := po.failed[id]; !ok || failed || id == "" {
		return out, nil
	}
	var e Event
	sum, n := s.sums[paid.Currency], s.counts[paid.Currency]
	other := ""
	if n != len(s.counted) {
		other = fmt.Sprintf("; %d lines in other currencies do not count", len(s.counted)-n)
	}
	switch diff := sum - paid.Amount; {
	case (diff != 0 || s.over) && !s.open[k]:
		e = Flagged{Meta: meta, Kind: k.kind, Key: k.key, Details: fmt.Sprintf(
			"payout %s of %s %s: its %d settlement lines in %s sum to %s %s (difference %s)%s", id,
			money.FormatMinor(paid.Amount, paid.Currency), paid.Currency, n, paid.Currency,
			money.FormatMinor(sum, paid.Currency), paid.Currency, money.FormatMinor(diff, paid.Currency), other)}
	case diff == 0 && !s.over && s.open[k]:
		e = Cleared{Meta: meta, Kind: k.kind, Key: k.key, Details: fmt.Sprintf(
			"payout %s: its %d settlement lines in %s sum to its amount%s", id, n, paid.Currency, other)}
	default:
		return out, nil
	}
	if err := po.apply(e); err != nil {
		return nil, err
	}
	return append(out, e), nil
}

func payoutIDOf(in delivery.Event) string {
	if l := in.SettledLine(); l != nil {
		return l.PayoutID
	}
	return in.Facts[0].BusinessID
}

// closeFailed: a failed payout (payout.failed, or a returned line) never
// reached the bank, so it is judged neither by its lines nor by which
// webhooks reported it: its open payout_mismatch and missing_webhook items
// close, as if the failure had come first (then they never open).
func (po *payout) closeFailed(in delivery.Event, out []Event) ([]Event, error) {
	if len(in.Facts) == 0 {
		return out, nil
	}
	id := payoutIDOf(in)
	if _, failed := po.failed[id]; !failed {
		return out, nil
	}
	meta := Meta{Provider: in.Provider, PaymentKey: id, DedupKey: in.DedupKey, OccurredAt: in.OccurredAt}
	for _, kind := range []string{ReconPayoutMismatch, ReconMissingWebhook} {
		k := reconKey{kind, id}
		if !po.settle.open[k] {
			continue
		}
		e := Cleared{Meta: meta, Kind: k.kind, Key: k.key, Details: "payout " + id + " failed: it never reached the bank"}
		if err := po.apply(e); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}
