package payment

import (
	"fmt"
	"sort"
	"time"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/settlement"
)

// How a settlement line joins a payment stream (docs/design.md, "Two
// sources of truth"). The line and the webhooks are two reports of the same
// business facts, matched by the ids the webhooks carry (capture, refund, dispute),
// so each fact is recorded once whichever source comes first:
//
//   - The line is always recorded (LineSettled): gross, fee, net,
//     settlement currency, original amount, rate, payout, availability.
//   - Its business fact (a capture for a charge line, a refund, a dispute's
//     funds withdrawn, a dispute's funds reinstated for a reversal) is
//     recorded from the line when no webhook recorded it, through the same
//     rules as a webhook's fact, and a missing_webhook item opens. The
//     webhook, arriving later, adds nothing and clears the item. A dispute
//     line is a movement of funds, like the webhooks' funds_withdrawn and
//     funds_reinstated: it moves the dispute where the facts reported so far
//     put it (aggregate.go disputed), so a line and its webhook, in either
//     order, move the funds once.
//   - When the fact was already recorded with another amount or currency,
//     settlement_mismatch opens and the line posts nothing more: the first
//     fact stands. The same holds the other way round.
//   - The line posts what only it knows. A capture's fee in the payment's
//     currency goes on the capture (FeeRecorded when the webhook did not
//     know it, fee 0; fee_mismatch when it knew another). Every other fee
//     (in another currency, of a refund, of a dispute, of a fee line) is a
//     FeeSettled. A settlement currency other than the original posts the
//     conversion (Converted) through fx:trading.
//
// Because each fact is recorded once and each posting depends only on the
// line's own amounts or on facts both sources agree on, the ledger ends the
// same for any order and duplication of consistent deliveries
// (settle_property_test.go).

// settleState is what the payment aggregate remembers about settlement:
// the lines recorded and the facts they reported, by business id.
type settleState struct {
	lines   map[string]bool          // dedup keys of the lines recorded
	settled map[reconKey]settledFact // (line kind, business id) → the first line's facts
	// hooked: the dispute facts webhooks reported, by dispute id. A
	// dispute line opens missing_webhook only for a movement no webhook
	// reported; the aggregate's disputeFacts cannot tell, since lines
	// record facts too.
	hooked map[string]disputeFacts
	// capturedAt: when each capture happened (its OccurredAt), for the
	// unsettled check.
	capturedAt map[string]time.Time
	// uncaptured: by capture id, the uncaptured parts of partially
	// captured charges that partial capture reversal lines reversed
	// (settlement.SourcePartialCaptureReversal), positive.
	uncaptured map[string]int64
	// cumulativeLines: the sum of the cumulative refund lines' amounts
	// (settlement.Line.CumulativeRefund), one per refund (cumulative.go).
	cumulativeLines int64
	// reported: by capture id, the amount a webhook reported for a capture
	// its charge line recorded otherwise (Flagged.Reported).
	reported map[string]int64
}

type settledFact struct {
	line             string // dedup key of the first line reporting the fact
	amount           int64  // its original amount, unsigned
	fee              int64  // the line's fee, settlement currency
	currency         money.Currency
	originalCurrency money.Currency
	cumulative       bool // a cumulative refund line (settlement.Line.CumulativeRefund)
}

// applySettlement folds the settlement events into the payment state.
func (p *Payment) applySettlement(e Event) {
	if c, ok := e.(Captured); ok {
		if _, seen := p.settle.capturedAt[c.CaptureID]; !seen {
			put(&p.settle.capturedAt, c.CaptureID, c.OccurredAt)
		}
	}
	switch e := e.(type) {
	case CaptureReduced:
		if _, ok := p.captures[e.CaptureID]; ok && !e.Failed { // a failed capture stays recorded (settle_reversal.go)
			put(&p.captures, e.CaptureID, p.add(p.captures[e.CaptureID], -e.Amount))
			p.captured = p.add(p.captured, -e.Amount)
		}
		return
	case Flagged:
		if e.Kind == ReconSettlementMismatch && e.Reported != 0 {
			put(&p.settle.reported, e.Key, e.Reported)
		}
	}
	ls, ok := e.(LineSettled)
	if !ok {
		p.applyHooked(e)
		return
	}
	l := ls.Line
	put(&p.settle.lines, l.DedupKey(), true)
	if id := l.BusinessID(); id != "" {
		k := reconKey{string(l.Kind), id}
		if _, seen := p.settle.settled[k]; !seen {
			put(&p.settle.settled, k, settledFact{line: l.DedupKey(), amount: abs(l.OriginalAmount), fee: l.Fee,
				currency: l.Currency, originalCurrency: l.OriginalCurrency, cumulative: cumulativeRefund(l)})
			if cumulativeRefund(l) {
				p.settle.cumulativeLines = p.add(p.settle.cumulativeLines, abs(l.OriginalAmount))
				p.couponLine(l.Discount) // discount.go
			}
		}
	}
	if partialCaptureReversal(l) {
		put(&p.settle.uncaptured, l.CaptureID, p.add(p.settle.uncaptured[l.CaptureID], abs(l.Gross)))
	}
}

// settlement is the aggregate's hook for settlement: it decides a
// delivery.KindSettled fact, and a webhook fact whose business fact a
// settlement line already reported. It returns false for a fact it leaves
// to the webhook rules.
func (d *decision) settlement(f delivery.Fact) bool {
	if f.Kind == delivery.KindSettled {
		if f.Settlement != nil {
			d.settleLine(*f.Settlement)
		}
		return true
	}
	if f.Kind == delivery.KindUnsettledCheck {
		d.unsettledCheck(time.Duration(f.Amount) * time.Second)
		return true
	}
	return d.webhookAfterLine(f)
}

func (d *decision) settleLine(l settlement.Line) {
	p := d.p
	if p.settle.lines[l.DedupKey()] {
		return
	}
	d.emit(LineSettled{Meta: d.meta, Line: l})
	switch l.Kind {
	case settlement.KindCharge:
		if k := (reconKey{ReconUnsettled, l.CaptureID}); p.open[k] {
			d.emit(Cleared{Meta: d.meta, Kind: k.kind, Key: k.key, Details: "settled by line " + l.DedupKey()})
		}
		d.settleCapture(l)
	case settlement.KindRefund:
		if cumulativeRefund(l) {
			d.settleCumulativeRefund(l) // cumulative.go
		} else {
			d.settleRefund(l)
		}
	case settlement.KindDispute:
		d.settleDisputeLine(l, delivery.KindDisputeOpened)
	case settlement.KindDisputeReversal:
		d.settleDisputeLine(l, delivery.KindDisputeFundsReinstated)
	case settlement.KindFee:
		d.feeSettled(l, -l.Net)
	case settlement.KindFX:
		d.emit(Converted{Meta: d.meta, LineID: l.DedupKey(), SettledAmount: l.Net, SettledCurrency: l.Currency,
			ExchangeRate: l.ExchangeRate})
	}
	if partialCaptureReversal(l) {
		d.settleUncaptured(l)
	}
	if l.Kind == settlement.KindAdjustment && l.Reversal != "" {
		d.settleReversal(l) // settle_reversal.go
	}
	// payout, adjustment: recorded, counted in their payout; an adjustment
	// with a counterpart posts by being recorded (settle_events.go).
}

// cumulativeRefund: l is a refund line whose refund the notifications
// report by the trade's refunded total (cumulative.go).
func cumulativeRefund(l settlement.Line) bool {
	return l.Kind == settlement.KindRefund && l.CumulativeRefund
}

// partialCaptureReversal: l reverses the uncaptured part of its capture.
func partialCaptureReversal(l settlement.Line) bool {
	return l.Kind == settlement.KindAdjustment && l.SourceType == settlement.SourcePartialCaptureReversal &&
		l.CaptureID != "" && l.Currency == l.OriginalCurrency
}

// authorizationOf reports whether a charge line of amount for capture id,
// recorded with the captured amount recorded (a webhook's amount_captured),
// is the capture's authorization: its amount is the capture's plus the
// uncaptured parts reversed so far (settlement.SourcePartialCaptureReversal).
func (p *Payment) authorizationOf(id string, amount, recorded int64) bool {
	u := p.settle.uncaptured[id]
	return u > 0 && amount == money.SaturatingAdd(recorded, u)
}

// settleUncaptured records a partial capture reversal line of r, the
// uncaptured part of a charge whose charge line reported the authorization
// A (Stripe: the charge row is "for the full amount of the authorization",
// the partial_capture_reversal row reverses "the uncaptured portion",
// docs.stripe.com/reports/reporting-categories). The capture ends at A less
// the reversals, whichever source recorded it first:
//
//   - Recorded with its captured amount (a webhook's amount_captured), its
//     charge line coming before and flagged settlement_mismatch: the
//     reversal accounts for the difference; the charge line's fee posts
//     now (once, as with any charge line) and the item clears.
//   - Recorded from its charge line at the authorization (or at A less the
//     reversals before this one): CaptureReduced by r. A settlement_mismatch
//     a webhook raised meanwhile clears when the capture now is what the
//     webhook reported (Flagged.Reported).
func (d *decision) settleUncaptured(l settlement.Line) {
	p, id := d.p, l.CaptureID
	s, ok := p.settle.settled[reconKey{string(settlement.KindCharge), id}]
	recorded, captured := p.captures[id]
	if !ok || !captured || s.currency != s.originalCurrency || s.originalCurrency != p.currency {
		return
	}
	k := reconKey{ReconSettlementMismatch, id}
	u, r := p.settle.uncaptured[id], abs(l.Gross)
	if p.open[k] && p.authorizationOf(id, s.amount, recorded) && p.settle.reported[id] == 0 {
		if p.fees[id] == 0 && s.fee != 0 {
			d.emit(FeeRecorded{Meta: d.meta, CaptureID: id, Fee: s.fee, Currency: s.currency})
		}
		d.emit(Cleared{Meta: d.meta, Kind: k.kind, Key: k.key, Details: fmt.Sprintf(
			"partial capture: the uncaptured %s was reversed by line %s", money.FormatMinor(u, l.Currency), l.DedupKey())})
		return
	}
	if r == 0 || r >= recorded || recorded != money.SaturatingAdd(s.amount-u, r) {
		return // not a capture at its authorization less the reversals before this one
	}
	d.emit(CaptureReduced{Meta: d.meta, CaptureID: id, Amount: r, Currency: p.currency, LineID: l.DedupKey()})
	if p.open[k] && p.settle.reported[id] == p.captures[id] {
		d.emit(Cleared{Meta: d.meta, Kind: k.kind, Key: k.key, Details: fmt.Sprintf(
			"partial capture: the uncaptured %s was reversed by line %s; the capture is now the webhook's %s",
			money.FormatMinor(u, l.Currency), l.DedupKey(), money.FormatMinor(p.captures[id], p.currency))})
	}
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// firstLine reports whether l is the first line reporting its business fact;
// a later line for the same fact (another line id) is compared with the
// first and posts nothing.
func (d *decision) firstLine(l settlement.Line) bool {
	k := reconKey{string(l.Kind), l.BusinessID()}
	first, seen := d.p.settle.settled[k]
	if !seen || first.line == l.DedupKey() {
		return true // the LineSettled just emitted made l the first
	}
	if first.currency != l.Currency || first.originalCurrency != l.OriginalCurrency || first.fee != l.Fee {
		d.flagOnce(ReconSettlementMismatch, l.BusinessID(), fmt.Sprintf("%s %s settled twice with different facts",
			l.Kind, l.BusinessID()))
	}
	return false
}

func (d *decision) mismatch(l settlement.Line, amount int64, cur money.Currency) {
	d.flagOnce(ReconSettlementMismatch, l.BusinessID(), fmt.Sprintf("%s %s settled as %s %s, recorded as %s %s; the recorded fact stands",
		l.Kind, l.BusinessID(), money.FormatMinor(abs(l.OriginalAmount), l.OriginalCurrency), l.OriginalCurrency,
		money.FormatMinor(amount, cur), cur))
}

func (d *decision) missing(key string, l settlement.Line) {
	if l.NoWebhook {
		return
	}
	d.flagOnce(ReconMissingWebhook, key, fmt.Sprintf("%s %s reported by settlement line %s (payout %s) but by no webhook; recorded from the line",
		l.Kind, l.BusinessID(), l.DedupKey(), l.PayoutID))
}

// clearMissing clears an open missing_webhook item: its webhook came after all.
func (d *decision) clearMissing(key string) {
	if k := (reconKey{ReconMissingWebhook, key}); d.p.open[k] {
		d.emit(Cleared{Meta: d.meta, Kind: k.kind, Key: k.key, Details: "the webhook arrived after the settlement line"})
	}
}

func (d *decision) feeSettled(l settlement.Line, fee int64) {
	if fee != 0 {
		d.emit(FeeSettled{Meta: d.meta, LineID: l.DedupKey(), Fee: fee, Currency: l.Currency})
	}
}

func (d *decision) convert(l settlement.Line) {
	if l.OriginalCurrency == l.Currency {
		return
	}
	d.emit(Converted{Meta: d.meta, LineID: l.DedupKey(), OriginalAmount: l.OriginalAmount,
		OriginalCurrency: l.OriginalCurrency, SettledAmount: l.Gross, SettledCurrency: l.Currency, ExchangeRate: l.ExchangeRate})
}

// sameCurrency reports whether the line settled in the currency it was
// charged in: then its fee can be the capture's fee.
func sameCurrency(l settlement.Line) bool { return l.Currency == l.OriginalCurrency }

func (d *decision) settleCapture(l settlement.Line) {
	p := d.p
	id := l.CaptureID
	if !d.firstLine(l) {
		return
	}
	amount, cur := abs(l.OriginalAmount), l.OriginalCurrency
	if recorded, ok := p.captures[id]; ok {
		if cur == p.currency && p.authorizationOf(id, amount, recorded) {
			amount = recorded // a partial capture: the line is its authorization
		}
		if cur != p.currency || amount != recorded {
			d.mismatch(l, recorded, p.currency)
			return
		}
		known := p.fees[id]
		switch {
		case sameCurrency(l) && known == 0:
			if l.Fee != 0 {
				d.emit(FeeRecorded{Meta: d.meta, CaptureID: id, Fee: l.Fee, Currency: l.Currency})
			}
		case sameCurrency(l) && known != l.Fee, !sameCurrency(l) && known != 0:
			d.feeMismatch(id, known, p.currency, l)
		case !sameCurrency(l):
			d.feeSettled(l, l.Fee)
		}
		d.convert(l)
		return
	}
	f := delivery.Fact{Kind: delivery.KindCaptured, BusinessID: id, Amount: amount, Currency: cur}
	if sameCurrency(l) {
		f.Fee, f.Discount = l.Fee, l.Discount // the order amount, the coupon the provider never paid
		if u := p.settle.uncaptured[id]; u > 0 && u < amount {
			// Its partial capture reversal came first: the line is the
			// authorization, the capture what was not reversed.
			f.Amount = amount - u
		}
	}
	d.captured(f)
	if _, ok := p.captures[id]; !ok {
		return // refused (currency_mismatch): nothing of it posts
	}
	d.missing(id, l)
	if !sameCurrency(l) {
		d.feeSettled(l, l.Fee)
	}
	d.convert(l)
}

func (d *decision) feeMismatch(id string, known int64, cur money.Currency, l settlement.Line) {
	d.flagOnce(ReconFeeMismatch, id, fmt.Sprintf("fee of capture %s: webhook %s %s, settlement %s %s; the first stands",
		id, money.FormatMinor(known, cur), cur, money.FormatMinor(l.Fee, l.Currency), l.Currency))
}

func (d *decision) settleRefund(l settlement.Line) {
	p := d.p
	id := l.RefundID
	if !d.firstLine(l) || d.closedBeforeLine(id) { // refund_closed.go
		return
	}
	amount, cur := abs(l.OriginalAmount), l.OriginalCurrency
	if r, ok := p.refunds[id]; ok {
		if r.state == refundFailedEarly {
			// Its failure came first: it never posts, so neither do its
			// fee nor its conversion.
			return
		}
		if r.amount != amount || r.currency != cur {
			d.mismatch(l, r.amount, r.currency)
			return
		}
	} else {
		d.refunded(delivery.Fact{Kind: delivery.KindRefunded, BusinessID: id, Amount: amount, Currency: cur, Discount: l.Discount})
		if _, ok := p.refunds[id]; !ok {
			return // refused (currency_mismatch)
		}
		d.missing(id, l)
	}
	d.feeSettled(l, l.Fee)
	d.convert(l)
}

// applyHooked remembers the dispute facts a webhook reported. A dispute
// event recorded by a line's delivery is the line's; one recorded while the
// dispute waited for its capture (pending) was decided by the capture's
// delivery, not reported by it: the DisputePending before it said who
// reported the fact.
func (p *Payment) applyHooked(e Event) {
	if p.settle.lines[e.Metadata().DedupKey] {
		return
	}
	var id string
	var k delivery.Kind
	switch e := e.(type) {
	case DisputePending:
		id, k = e.DisputeID, delivery.Kind(e.Fact)
	case DisputeOpened:
		id, k = e.DisputeID, delivery.KindDisputeOpened
	case DisputeFundsWithdrawn:
		id, k = e.DisputeID, delivery.KindDisputeOpened
	case DisputeFundsReinstated:
		id, k = e.DisputeID, delivery.KindDisputeFundsReinstated
	case DisputeWon:
		id, k = e.DisputeID, delivery.KindDisputeWon
	case DisputeLost:
		id, k = e.DisputeID, delivery.KindDisputeLost
	default:
		return
	}
	if ds := p.disputes[id]; ds != nil && ds.pending {
		if _, isPending := e.(DisputePending); !isPending {
			return
		}
	}
	put(&p.settle.hooked, id, p.settle.hooked[id].with(k))
}

// reinstatedKey is the missing_webhook key of a dispute's reversal line:
// the dispute id keys its withdrawal.
func reinstatedKey(id string) string { return id + ":reinstated" }

// webhookReportedDispute: a webhook reported the dispute with funds or an
// outcome (an inquiry alone does not say the funds moved).
func webhookReportedDispute(f disputeFacts) bool { return f != disputeFacts{} }

// webhookReportedReinstatement: a webhook said the funds came back (won
// or reinstated).
func webhookReportedReinstatement(f disputeFacts) bool { return f.won || f.reinstated }

// settleDisputeLine records a dispute line: funds withdrawn (kind
// KindDisputeOpened, Stripe reporting category "dispute") or reinstated
// (KindDisputeFundsReinstated, "dispute_reversal"), through the webhook
// rules (disputed), so that a line and a webhook reporting the same
// movement move the funds once. A line that names no dispute (PayPal's
// chargeback rows carry the chargeback's transaction id, not the PP-D-…
// id the webhooks use) cannot be matched: it is recorded and its fee
// posted.
func (d *decision) settleDisputeLine(l settlement.Line, kind delivery.Kind) {
	p := d.p
	id := l.DisputeID
	if id == "" {
		d.feeSettled(l, l.Fee)
		return
	}
	if !d.firstLine(l) {
		return
	}
	amount, cur := abs(l.OriginalAmount), l.OriginalCurrency
	ds, known := p.disputes[id]
	if known && (ds.amount != amount || ds.currency != cur) {
		d.mismatch(l, ds.amount, ds.currency)
		return
	}
	if known && ds.facts.lost && kind == delivery.KindDisputeFundsReinstated {
		// Lost is final (aggregate.go): the reversal is flagged, not posted.
		d.disputed(delivery.Fact{Kind: kind, BusinessID: id, Amount: amount, Currency: cur})
		return
	}
	d.disputed(delivery.Fact{Kind: kind, BusinessID: id, Amount: amount, Currency: cur})
	if _, ok := p.disputes[id]; !ok {
		return // refused (currency_mismatch): nothing of it posts
	}
	hooked := p.settle.hooked[id]
	if !webhookReportedDispute(hooked) {
		d.missing(id, l)
	}
	if kind == delivery.KindDisputeFundsReinstated && !webhookReportedReinstatement(hooked) {
		d.missing(reinstatedKey(id), l)
	}
	d.feeSettled(l, l.Fee)
	d.convert(l)
}

// webhookAfterLine handles a webhook fact whose business fact a settlement
// line already reported: the fact is not recorded again; the line's
// missing_webhook item clears; a different amount or currency than the line
// recorded opens settlement_mismatch, a different fee fee_mismatch. It
// returns false when the webhook rules should decide (no line reported the
// fact, or the fact is a dispute outcome the line did not report).
func (d *decision) webhookAfterLine(f delivery.Fact) bool {
	p := d.p
	if p.settle.settled == nil {
		return false
	}
	switch f.Kind {
	case delivery.KindCaptured:
		s, ok := p.settle.settled[reconKey{string(settlement.KindCharge), f.BusinessID}]
		amount, recorded := p.captures[f.BusinessID]
		if !ok || !recorded {
			return false
		}
		fromLine := p.flagged[reconKey{ReconMissingWebhook, f.BusinessID}]
		d.clearMissing(f.BusinessID)
		if f.Currency != p.currency || f.Amount != amount {
			if !fromLine {
				return false // two webhooks disagree: amount_mismatch, the webhook rules
			}
			if k := (reconKey{ReconSettlementMismatch, f.BusinessID}); !p.flagged[k] {
				fl := Flagged{Meta: d.meta, Kind: k.kind, Key: k.key, Details: fmt.Sprintf("capture %s reported by webhook as %s %s, settled as %s %s; the settled fact stands",
					f.BusinessID, money.FormatMinor(f.Amount, f.Currency), f.Currency, money.FormatMinor(amount, p.currency), p.currency)}
				if f.Currency == p.currency && f.Amount < amount {
					fl.Reported = f.Amount // a partial capture's reversal line may bring the capture to it
				}
				d.emit(fl)
			}
			return true
		}
		if f.Fee != 0 && (s.currency != s.originalCurrency || f.Fee != s.fee) {
			d.flagOnce(ReconFeeMismatch, f.BusinessID, fmt.Sprintf("fee of capture %s: webhook %s %s, settlement %s %s; the settlement's stands",
				f.BusinessID, money.FormatMinor(f.Fee, f.Currency), f.Currency, money.FormatMinor(s.fee, s.currency), s.currency))
		}
		return true
	case delivery.KindRefunded:
		if _, ok := p.settle.settled[reconKey{string(settlement.KindRefund), f.BusinessID}]; !ok {
			return false
		}
		r, recorded := p.refunds[f.BusinessID]
		if !recorded {
			return false
		}
		fromLine := p.flagged[reconKey{ReconMissingWebhook, f.BusinessID}]
		d.clearMissing(f.BusinessID)
		if fromLine && (r.amount != f.Amount || r.currency != f.Currency) {
			d.flagOnce(ReconSettlementMismatch, f.BusinessID, fmt.Sprintf("refund %s reported by webhook as %s %s, settled as %s %s; the settled fact stands",
				f.BusinessID, money.FormatMinor(f.Amount, f.Currency), f.Currency, money.FormatMinor(r.amount, r.currency), r.currency))
			return true
		}
		// Equal: nothing to add. Different, and the webhooks recorded it:
		// two webhooks disagree, the webhook rules flag amount_mismatch.
		return r.amount == f.Amount && r.currency == f.Currency
	case delivery.KindRefundCumulative:
		s, ok := p.settle.settled[reconKey{string(settlement.KindRefund), f.BusinessID}]
		if !ok || !s.cumulative {
			return false
		}
		d.cumulativeAfterLine(f, s) // cumulative.go
		return true
	case delivery.KindDisputeOpened, delivery.KindDisputeFundsReinstated, delivery.KindDisputeWon, delivery.KindDisputeLost:
		_, opened := p.settle.settled[reconKey{string(settlement.KindDispute), f.BusinessID}]
		_, reversed := p.settle.settled[reconKey{string(settlement.KindDisputeReversal), f.BusinessID}]
		ds, recorded := p.disputes[f.BusinessID]
		if (!opened && !reversed) || !recorded {
			return false
		}
		fromLine := p.flagged[reconKey{ReconMissingWebhook, f.BusinessID}]
		d.clearMissing(f.BusinessID)
		if webhookReportedReinstatement(disputeFacts{}.with(f.Kind)) {
			d.clearMissing(reinstatedKey(f.BusinessID))
		}
		if fromLine && (ds.amount != f.Amount || ds.currency != f.Currency) {
			d.flagOnce(ReconSettlementMismatch, f.BusinessID, fmt.Sprintf("dispute %s reported by webhook as %s %s, settled as %s %s; the settled fact stands",
				f.BusinessID, money.FormatMinor(f.Amount, f.Currency), f.Currency, money.FormatMinor(ds.amount, ds.currency), ds.currency))
			return true
		}
		return false // the webhook rules move the funds; a movement the line recorded adds nothing there
	}
	return false
}

// unsettledCheck opens `unsettled` for each capture recorded at least after
// before the check's time (the imported report's latest line) that no
// settlement line settled and that has no item yet; a charge line arriving
// later clears it (settleLine).
func (d *decision) unsettledCheck(after time.Duration) {
	p := d.p
	cutoff := d.meta.OccurredAt.Add(-after)
	var ids []string
	for id, at := range p.settle.capturedAt {
		_, settled := p.settle.settled[reconKey{string(settlement.KindCharge), id}]
		if !settled && !p.flagged[reconKey{ReconUnsettled, id}] && !at.After(cutoff) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		d.emit(Flagged{Meta: d.meta, Kind: ReconUnsettled, Key: id, Details: fmt.Sprintf(
			"capture %s of %s has no settlement line %s after it", id, p.settle.capturedAt[id].Format(time.RFC3339), after)})
	}
}
