package payment

import (
	"fmt"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

// ReconUnknownRefundFailed is the reconciliation kind opened when a provider
// reports that a refund failed before it reported the refund itself. The
// failure is remembered (Flagged) so that the refund, when it arrives later,
// is never posted: the ledger then ends where it would have ended had the two
// arrived in order (refund posted, then reversed: net nothing). The item is
// cleared when the refund arrives.
const ReconUnknownRefundFailed = "unknown_refund_failed"

// overRefundKey is the single over_refund item of a payment: it is about the
// payment's refunds as a whole, not one refund.
const overRefundKey = "refunds"

type refundState int

const (
	refundPending     refundState = iota + 1 // recorded before any capture; posts nothing yet
	refundPosted                             // on the ledger
	refundReversed                           // posted, then failed: postings undone
	refundDropped                            // pending, then failed: will never post
	refundFailedEarly                        // its failure arrived first: will never post
)

type refund struct {
	amount   int64
	currency money.Currency
	state    refundState
}

type dispute struct {
	amount   int64
	currency money.Currency
	outcome  string // "", TypeDisputeWon or TypeDisputeLost
}

type reconKey struct{ kind, key string }

// Payment is the payment aggregate. apply folds recorded events; decide turns
// a delivery into new events. It remembers every dedup key it has applied and
// every business id (capture, refund, dispute) so that a fact reported twice,
// under the same or another dedup key, is recorded once.
//
// The rules are built so that the ledger does not depend on arrival order: a
// refund before its capture waits (RefundPending) and posts with the capture;
// a dispute outcome before its opening records the opening first; a refund
// failure before the refund keeps the refund from ever posting; a capture's
// fee reported after the capture (fee 0 meaning unknown) is recorded on its
// own; a loss after a win is recorded, a win after a loss is not (lost is
// final).
type Payment struct {
	applied map[string]bool // dedup keys of deliveries that produced events

	currency money.Currency // set by the first event carrying a currency

	authorized, failed, canceled bool

	captures map[string]int64 // capture id → amount
	fees     map[string]int64 // capture id → fee; 0 means not known yet
	captured int64            // sum of captures

	refunds     map[string]*refund
	refundOrder []string // refund ids in the order first recorded: deterministic output
	refunded    int64    // posted refunds net of reversals

	disputes map[string]*dispute

	open    map[reconKey]bool // open reconciliation items
	flagged map[reconKey]bool // items ever opened: mismatches are flagged once

	settle settleState // settlement lines recorded (settle.go)
}

func newPayment() *Payment {
	return &Payment{
		applied:  map[string]bool{},
		captures: map[string]int64{},
		fees:     map[string]int64{},
		refunds:  map[string]*refund{},
		disputes: map[string]*dispute{},
		open:     map[reconKey]bool{},
		flagged:  map[reconKey]bool{},
	}
}

// apply folds one recorded event into the state. It never fails: history is
// what happened.
func (p *Payment) apply(e Event) {
	p.applied[e.Metadata().DedupKey] = true
	switch e := e.(type) {
	case Authorized:
		p.authorized = true
		p.setCurrency(e.Currency)
	case Captured:
		if _, ok := p.captures[e.CaptureID]; !ok {
			p.captures[e.CaptureID] = e.Amount
			p.fees[e.CaptureID] = e.Fee
			p.captured += e.Amount
		}
		p.setCurrency(e.Currency)
	case FeeRecorded:
		p.fees[e.CaptureID] = e.Fee
	case Failed:
		p.failed = true
	case Canceled:
		p.canceled = true
	case RefundPending:
		r := p.refund(e.RefundID)
		r.amount, r.currency, r.state = e.Amount, e.Currency, refundPending
		p.setCurrency(e.Currency)
	case RefundPosted:
		r := p.refund(e.RefundID)
		if r.state != refundPosted {
			p.refunded += e.Amount
		}
		r.amount, r.currency, r.state = e.Amount, e.Currency, refundPosted
		p.setCurrency(e.Currency)
	case RefundReversed:
		r := p.refund(e.RefundID)
		if e.WasPending {
			r.state = refundDropped
		} else {
			if r.state == refundPosted {
				p.refunded -= e.Amount
			}
			r.state = refundReversed
		}
	case DisputeOpened:
		d := p.dispute(e.DisputeID)
		d.amount, d.currency = e.Amount, e.Currency
		p.setCurrency(e.Currency)
	case DisputeWon:
		p.dispute(e.DisputeID).outcome = TypeDisputeWon
	case DisputeLost:
		p.dispute(e.DisputeID).outcome = TypeDisputeLost
	case Flagged:
		k := reconKey{e.Kind, e.Key}
		p.open[k] = true
		p.flagged[k] = true
		if e.Kind == ReconUnknownRefundFailed {
			if _, ok := p.refunds[e.Key]; !ok {
				p.refund(e.Key).state = refundFailedEarly
			}
		}
	case Cleared:
		delete(p.open, reconKey{e.Kind, e.Key})
	}
	p.applySettlement(e) // settle.go
}

func (p *Payment) setCurrency(c money.Currency) {
	if p.currency == "" {
		p.currency = c
	}
}

func (p *Payment) refund(id string) *refund {
	r, ok := p.refunds[id]
	if !ok {
		r = &refund{}
		p.refunds[id] = r
		p.refundOrder = append(p.refundOrder, id)
	}
	return r
}

func (p *Payment) dispute(id string) *dispute {
	d, ok := p.disputes[id]
	if !ok {
		d = &dispute{}
		p.disputes[id] = d
	}
	return d
}

// decide returns the events the delivery adds, applying each to p as it is
// emitted so that later facts of the same delivery see the earlier ones.
// A delivery already applied (same dedup key) adds nothing.
func (p *Payment) decide(in delivery.Event) []Event {
	if p.applied[in.DedupKey] {
		return nil
	}
	d := &decision{p: p, meta: Meta{
		Provider:   in.Provider,
		PaymentKey: in.PaymentKey,
		DedupKey:   in.DedupKey,
		OccurredAt: in.OccurredAt,
	}}
	for _, f := range in.Facts {
		d.fact(f)
	}
	return d.out
}

// decision accumulates the events of one delivery.
type decision struct {
	p    *Payment
	meta Meta
	out  []Event
}

func (d *decision) emit(e Event) {
	d.out = append(d.out, e)
	d.p.apply(e)
}

func (d *decision) fact(f delivery.Fact) {
	if d.settlement(f) { // settle.go: a settlement line, or a webhook fact a line reported first
		d.overRefund()
		return
	}
	switch f.Kind {
	case delivery.KindAuthorized:
		d.authorized(f)
	case delivery.KindCaptured:
		d.captured(f)
	case delivery.KindFailed:
		if !d.p.failed {
			d.emit(Failed{Meta: d.meta, Reason: delivery.TruncateReason(f.Reason)})
		}
	case delivery.KindCanceled:
		if !d.p.canceled {
			d.emit(Canceled{Meta: d.meta, Reason: delivery.TruncateReason(f.Reason)})
		}
	case delivery.KindRefunded:
		d.refunded(f)
	case delivery.KindRefundFailed:
		d.refundFailed(f)
	case delivery.KindDisputeOpened:
		d.disputed(f, "")
	case delivery.KindDisputeWon:
		d.disputed(f, TypeDisputeWon)
	case delivery.KindDisputeLost:
		d.disputed(f, TypeDisputeLost)
	}
	// Refund totals move with captures, refunds and reversals; checking after
	// every fact keeps the over_refund item in step whatever the order.
	d.overRefund()
}

func (d *decision) flagOnce(kind, key, details string) {
	k := reconKey{kind, key}
	if d.p.flagged[k] {
		return
	}
	d.emit(Flagged{Meta: d.meta, Kind: kind, Key: key, Details: details})
}

// currencyOK reports whether f may touch the ledger: its currency is the
// payment's (set by the first money fact) or it carries none. A fact in
// another currency posts nothing and opens a currency_mismatch item, once per
// business id.
func (d *decision) currencyOK(f delivery.Fact) bool {
	if f.Currency == "" || d.p.currency == "" || f.Currency == d.p.currency {
		return true
	}
	key := f.BusinessID
	if key == "" {
		key = string(f.Kind)
	}
	d.flagOnce(ReconCurrencyMismatch, key, fmt.Sprintf("%s %s reported in %s, the payment is in %s",
		f.Kind, key, f.Currency, d.p.currency))
	return false
}

func (d *decision) authorized(f delivery.Fact) {
	if d.p.authorized || !d.currencyOK(f) {
		return
	}
	d.emit(Authorized{Meta: d.meta, AuthorizationID: f.BusinessID, Amount: f.Amount, Currency: f.Currency})
}

func (d *decision) captured(f delivery.Fact) {
	p := d.p
	if !d.currencyOK(f) {
		return
	}
	if amt, ok := p.captures[f.BusinessID]; ok {
		if amt != f.Amount {
			d.flagOnce(ReconAmountMismatch, f.BusinessID, fmt.Sprintf("capture %s reported as %s and as %s",
				f.BusinessID, money.FormatMinor(amt, f.Currency), money.FormatMinor(f.Amount, f.Currency)))
			return
		}
		d.captureFee(f)
		return
	}
	d.emit(Captured{Meta: d.meta, CaptureID: f.BusinessID, Amount: f.Amount, Fee: f.Fee, Currency: f.Currency})
	// The payment now has money: refunds that were waiting for it post now,
	// in the order they arrived.
	for _, id := range p.refundOrder {
		r := p.refunds[id]
		if r.state != refundPending {
			continue
		}
		d.emit(RefundPosted{Meta: d.meta, RefundID: id, Amount: r.amount, Currency: r.currency, WasPending: true})
		d.emit(Cleared{Meta: d.meta, Kind: ReconRefundBeforePayment, Key: id,
			Details: "capture " + f.BusinessID + " arrived; refund posted"})
	}
}

// captureFee handles a capture reported again with the same amount. A fee of
// 0 means the report did not know the fee, so the first non-zero fee is the
// fee: recorded on its own when the capture was recorded without one, so that
// the ledger does not depend on which report came first. Another non-zero fee
// later is flagged and not posted.
func (d *decision) captureFee(f delivery.Fact) {
	fee := d.p.fees[f.BusinessID]
	switch {
	case f.Fee == 0 || f.Fee == fee:
	case fee == 0:
		d.emit(FeeRecorded{Meta: d.meta, CaptureID: f.BusinessID, Fee: f.Fee, Currency: f.Currency})
	default:
		d.flagOnce(ReconAmountMismatch, f.BusinessID+":fee", fmt.Sprintf("fee of capture %s reported as %s and as %s",
			f.BusinessID, money.FormatMinor(fee, f.Currency), money.FormatMinor(f.Fee, f.Currency)))
	}
}

func (d *decision) refunded(f delivery.Fact) {
	p := d.p
	if r, ok := p.refunds[f.BusinessID]; ok {
		if r.state == refundFailedEarly {
			// The refund's failure came first: it must never post.
			if k := (reconKey{ReconUnknownRefundFailed, f.BusinessID}); p.open[k] {
				d.emit(Cleared{Meta: d.meta, Kind: k.kind, Key: k.key,
					Details: "refund reported after its failure; not posted"})
			}
			return
		}
		if r.amount != f.Amount {
			d.flagOnce(ReconAmountMismatch, f.BusinessID, fmt.Sprintf("refund %s reported as %s and as %s",
				f.BusinessID, money.FormatMinor(r.amount, r.currency), money.FormatMinor(f.Amount, f.Currency)))
		}
		return
	}
	if !d.currencyOK(f) {
		return
	}
	if len(p.captures) == 0 {
		d.emit(RefundPending{Meta: d.meta, RefundID: f.BusinessID, Amount: f.Amount, Currency: f.Currency})
		d.emit(Flagged{Meta: d.meta, Kind: ReconRefundBeforePayment, Key: f.BusinessID,
			Details: "refund " + f.BusinessID + " arrived before any capture; posted when a capture arrives"})
		return
	}
	d.emit(RefundPosted{Meta: d.meta, RefundID: f.BusinessID, Amount: f.Amount, Currency: f.Currency})
}

func (d *decision) refundFailed(f delivery.Fact) {
	p := d.p
	r, ok := p.refunds[f.BusinessID]
	if !ok {
		if p.flagged[reconKey{ReconCurrencyMismatch, f.BusinessID}] {
			return // the refund was never recorded; nothing to undo or remember
		}
		d.emit(Flagged{Meta: d.meta, Kind: ReconUnknownRefundFailed, Key: f.BusinessID,
			Details: "refund " + f.BusinessID + " failed before it was reported; it will not post"})
		return
	}
	switch r.state {
	case refundPosted:
		d.emit(RefundReversed{Meta: d.meta, RefundID: f.BusinessID, Amount: r.amount, Currency: r.currency})
	case refundPending:
		d.emit(RefundReversed{Meta: d.meta, RefundID: f.BusinessID, Amount: r.amount, Currency: r.currency, WasPending: true})
		d.emit(Cleared{Meta: d.meta, Kind: ReconRefundBeforePayment, Key: f.BusinessID,
			Details: "refund failed before any capture; dropped"})
	}
}

// disputed handles an opening (outcome "") or an outcome. An outcome for a
// dispute never opened records the opening first, with the outcome's amount,
// so the receivable account nets out whatever the order. Outcomes always move
// the amount the dispute was opened with.
//
// Lost is final (Adyen: CHARGEBACK, CHARGEBACK_REVERSED, SECOND_CHARGEBACK):
// a loss after a win is recorded as a DisputeLost that reverses the win, so
// the ledger ends as after a plain loss; a win after a loss posts nothing and
// opens a dispute_outcome_conflict item. Either order ends on the loss.
func (d *decision) disputed(f delivery.Fact, outcome string) {
	p := d.p
	ds, ok := p.disputes[f.BusinessID]
	if !ok {
		if !d.currencyOK(f) {
			return
		}
		d.emit(DisputeOpened{Meta: d.meta, DisputeID: f.BusinessID, Amount: f.Amount, Currency: f.Currency})
		ds = p.disputes[f.BusinessID]
	} else if f.Amount != ds.amount {
		d.flagOnce(ReconAmountMismatch, f.BusinessID, fmt.Sprintf("dispute %s reported as %s and as %s",
			f.BusinessID, money.FormatMinor(ds.amount, ds.currency), money.FormatMinor(f.Amount, f.Currency)))
	}
	if outcome == "" || outcome == ds.outcome {
		return
	}
	switch {
	case ds.outcome == "" && outcome == TypeDisputeWon:
		d.emit(DisputeWon{Meta: d.meta, DisputeID: f.BusinessID, Amount: ds.amount, Currency: ds.currency})
	case outcome == TypeDisputeLost:
		d.emit(DisputeLost{Meta: d.meta, DisputeID: f.BusinessID, Amount: ds.amount, Currency: ds.currency,
			ReversesWin: ds.outcome == TypeDisputeWon})
	default: // won after lost
		d.flagOnce(ReconDisputeOutcomeConflict, f.BusinessID, fmt.Sprintf("dispute %s reported won after it was lost; the loss stands",
			f.BusinessID))
	}
}

// overRefund keeps the payment's single over_refund item in step with the
// totals: open while posted refunds exceed captures, cleared when captures
// catch up. Over-refunds still post: the money has left.
func (d *decision) overRefund() {
	p := d.p
	k := reconKey{ReconOverRefund, overRefundKey}
	switch {
	case p.refunded > p.captured && !p.open[k]:
		d.emit(Flagged{Meta: d.meta, Kind: k.kind, Key: k.key, Details: fmt.Sprintf("refunds %s exceed captures %s",
			money.FormatMinor(p.refunded, p.currency), money.FormatMinor(p.captured, p.currency))})
	case p.refunded <= p.captured && p.open[k]:
		d.emit(Cleared{Meta: d.meta, Kind: k.kind, Key: k.key, Details: fmt.Sprintf("refunds %s within captures %s",
			money.FormatMinor(p.refunded, p.currency), money.FormatMinor(p.captured, p.currency))})
	}
}
