package payment

import (
	"fmt"
	"time"

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
	amount   int64 // posted (or pending) under this id; a cumulative refund's: the increases
	currency money.Currency
	state    refundState
	at       time.Time // a pending refund's own moment: it posts then, not at the capture's
}

// overReversalKey is the single over_reversal item of a payment.
const overReversalKey = "reversals"

// disputeStage is where a dispute's amount stands on the ledger.
type disputeStage int

const (
	stageNone     disputeStage = iota // nothing posted (an inquiry, or pending)
	stageHeld                         // withdrawn: in receivable:disputes:p
	stageReleased                     // back in the balance (won or reinstated)
	stageLost                         // in expenses:disputes; final
)

// disputeFacts are what the provider reported about a dispute, whatever the
// order. They decide where its amount must stand (target); the ledger is
// moved there from where it stands.
type disputeFacts struct {
	withdrawn, reinstated, won, lost bool
}

// with returns the facts after a report of kind k. Reinstated and lost
// imply the funds were withdrawn: the provider cannot give back or keep what
// it never took. Won does not: an inquiry can close in our favour (Stripe
// warning_closed) without funds ever moving.
func (f disputeFacts) with(k delivery.Kind) disputeFacts {
	switch k {
	case delivery.KindDisputeOpened:
		f.withdrawn = true
	case delivery.KindDisputeFundsReinstated:
		f.withdrawn, f.reinstated = true, true
	case delivery.KindDisputeWon:
		f.won = true
	case delivery.KindDisputeLost:
		f.withdrawn, f.lost = true, true
	}
	return f
}

func (f disputeFacts) target() disputeStage {
	switch {
	case f.lost:
		return stageLost
	case f.won || f.reinstated:
		return stageReleased
	case f.withdrawn:
		return stageHeld
	}
	return stageNone
}

type dispute struct {
	amount   int64
	currency money.Currency
	facts    disputeFacts // reported, as recorded by the stream's events
	posted   disputeStage // where the ledger has it
	pending  bool         // recorded before any capture; dispute_before_payment open
	won      bool         // a DisputeWon is recorded
}

type reconKey struct{ kind, key string }

// Payment is the payment aggregate. apply folds recorded events; decide turns
// a delivery into new events. It remembers every dedup key it has applied and
// every business id (capture, refund, dispute) so that a fact reported twice,
// under the same or another dedup key, is recorded once.
//
// The rules are built so that the ledger does not depend on arrival order: a
// refund before its capture waits (RefundPending) and posts with the capture;
// a dispute posts where the funds the provider reported moving put it
// (inquiries post nothing; withdrawals, reinstatements and outcomes move the
// amount, whatever order they arrive in), and before any capture it waits
// (DisputePending) like a refund; a refund failure before the refund keeps
// the refund from ever posting; a capture's fee reported after the capture
// (fee 0 meaning unknown) is recorded on its own; a loss after a win is
// recorded, a win after a loss is not (lost is final). Totals are checked
// sums: a delivery that would overflow one is refused.
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
	// cumulative is the trade's refunded total as the cumulative refunds
	// (delivery.KindRefundCumulative, and their bill lines) have it so
	// far: the highest total a notification reported or the sum of the
	// refund lines, whichever is greater (cumulative.go); the sum of the
	// increases recorded, pending or posted.
	cumulative int64
	// reported: by refund id, the refunded total its cumulative
	// notification reported.
	reported map[string]int64
	// reportedAt: by refund id, when its cumulative notification said the
	// refund happened (Alipay gmt_refund): an earlier refund's
	// notification arriving late is booked at its own time (cumulative.go,
	// reattribute).
	reportedAt map[string]time.Time
	noted      map[string]bool // refund id + "/" + status of RefundNoted events

	disputes     map[string]*dispute
	disputeOrder []string // dispute ids in the order first recorded
	disputedOut  int64    // amounts held or lost (stageHeld, stageLost)

	// overflowed is set when a total saturated: decide refuses the delivery
	// that caused it (bad amount, 400) rather than record a wrapped total.
	overflowed bool

	open    map[reconKey]bool // open reconciliation items
	flagged map[reconKey]bool // items ever opened: mismatches are flagged once
	// overReversalBeside: the open over_reversal item was opened while
	// refunds alone exceeded the captures, as every over-refund did before
	// one problem made one item; such an item keeps the rule it was opened
	// under (overReversal).
	overReversalBeside bool

	settle settleState // settlement lines recorded (settle.go)

	coupons couponState // coupons captured and returned (discount.go)
}

func newPayment() *Payment {
	// The maps are made on their first write (put): most payments write
	// few of them, and the ingest path folds a payment per delivery.
	return &Payment{}
}

// apply folds one recorded event into the state. It never fails: history is
// what happened.
func (p *Payment) apply(e Event) {
	put(&p.applied, e.Metadata().DedupKey, true)
	p.applyCoupons(e) // discount.go
	switch e := e.(type) {
	case Authorized:
		p.authorized = true
		p.setCurrency(e.Currency)
	case Captured:
		if _, ok := p.captures[e.CaptureID]; !ok {
			put(&p.captures, e.CaptureID, e.Amount)
			put(&p.fees, e.CaptureID, e.Fee)
			p.captured = p.add(p.captured, e.Amount)
		}
		p.setCurrency(e.Currency)
	case FeeRecorded:
		put(&p.fees, e.CaptureID, e.Fee)
	case Failed:
		p.failed = true
	case Canceled:
		p.canceled = true
	case RefundPending:
		r := p.refund(e.RefundID)
		amount := e.Amount
		if e.Increase {
			amount = p.add(r.amount, e.Amount)
		}
		r.amount, r.currency, r.state, r.at = amount, e.Currency, refundPending, e.OccurredAt
		p.cumulate(e.RefundID, e.Amount, e.Total, e.FromLine, e.OccurredAt)
		p.setCurrency(e.Currency)
	case RefundPosted:
		r := p.refund(e.RefundID)
		amount := e.Amount
		if r.state != refundPosted || e.Increase {
			p.refunded = p.add(p.refunded, e.Amount)
		}
		if e.Increase {
			amount = p.add(r.amount, e.Amount)
		}
		if !e.WasPending {
			p.cumulate(e.RefundID, e.Amount, e.Total, e.FromLine, e.OccurredAt)
		}
		r.amount, r.currency, r.state = amount, e.Currency, refundPosted
		p.setCurrency(e.Currency)
	case RefundNoted:
		put(&p.noted, e.RefundID+"/"+e.Status, true)
		if e.Status == string(delivery.KindRefundCumulative) {
			put(&p.reported, e.RefundID, e.Amount)
			p.reportedWhen(e.RefundID, e.OccurredAt)
		}
		p.setCurrency(e.Currency)
	case RefundReversed:
		r := p.refund(e.RefundID)
		if e.WasPending {
			r.state = refundDropped
		} else {
			if r.state == refundPosted {
				p.refunded = p.add(p.refunded, -e.Amount)
			}
			r.state = refundReversed
		}
	case DisputeOpened:
		p.disputeRecorded(e.DisputeID, e.Amount, e.Currency).facts.withdrawn = true
		p.disputeStage(e.DisputeID, stageHeld)
	case DisputeFundsWithdrawn:
		p.disputeRecorded(e.DisputeID, e.Amount, e.Currency).facts.withdrawn = true
		p.disputeStage(e.DisputeID, stageHeld)
	case DisputeInquiry:
		p.disputeRecorded(e.DisputeID, e.Amount, e.Currency)
	case DisputePending:
		d := p.disputeRecorded(e.DisputeID, e.Amount, e.Currency)
		d.facts = d.facts.with(delivery.Kind(e.Fact))
		d.pending = true
	case DisputeFundsReinstated:
		d := p.dispute(e.DisputeID)
		d.facts.withdrawn, d.facts.reinstated = true, true
		p.disputeStage(e.DisputeID, stageReleased)
	case DisputeWon:
		d := p.dispute(e.DisputeID)
		d.facts.won, d.won = true, true
		// A win with no funds moved leaves the ledger where it is: if the
		// withdrawal is reported later (out of order), both movements post.
		if !e.NoFunds {
			p.disputeStage(e.DisputeID, stageReleased)
		}
	case DisputeLost:
		d := p.dispute(e.DisputeID)
		d.facts.withdrawn, d.facts.lost = true, true
		p.disputeStage(e.DisputeID, stageLost)
	case Flagged:
		k := reconKey{e.Kind, e.Key}
		put(&p.open, k, true)
		put(&p.flagged, k, true)
		if e.Kind == ReconOverReversal {
			p.overReversalBeside = p.refunded > p.captured
		}
		if e.Kind == ReconUnknownRefundFailed {
			if _, ok := p.refunds[e.Key]; !ok {
				p.refund(e.Key).state = refundFailedEarly
			}
		}
	case Cleared:
		delete(p.open, reconKey{e.Kind, e.Key})
		if e.Kind == ReconDisputeBeforePayment {
			if d, ok := p.disputes[e.Key]; ok {
				d.pending = false
			}
		}
	}
	p.applySettlement(e) // settle.go
}

// add is the aggregate's checked sum: on overflow it saturates and marks the
// payment, so that apply never fails (history is what happened) and decide
// refuses the delivery that caused it.
func (p *Payment) add(a, b int64) int64 {
	s, err := money.Add(a, b)
	if err != nil {
		p.overflowed = true
		return money.SaturatingAdd(a, b)
	}
	return s
}

// disputeRecorded returns the dispute, recording its amount and currency the
// first time.
func (p *Payment) disputeRecorded(id string, amount int64, c money.Currency) *dispute {
	d, ok := p.disputes[id]
	if !ok {
		d = p.dispute(id)
		d.amount, d.currency = amount, c
	}
	p.setCurrency(c)
	return d
}

// disputeStage moves the dispute's ledger stage, keeping disputedOut (the
// amounts the provider holds or took) in step.
func (p *Payment) disputeStage(id string, to disputeStage) {
	d := p.dispute(id)
	out := func(s disputeStage) bool { return s == stageHeld || s == stageLost }
	switch {
	case out(to) && !out(d.posted):
		p.disputedOut = p.add(p.disputedOut, d.amount)
	case !out(to) && out(d.posted):
		p.disputedOut = p.add(p.disputedOut, -d.amount)
	}
	d.posted = to
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
		put(&p.refunds, id, r)
		p.refundOrder = append(p.refundOrder, id)
	}
	return r
}

func (p *Payment) dispute(id string) *dispute {
	d, ok := p.disputes[id]
	if !ok {
		d = &dispute{}
		put(&p.disputes, id, d)
		p.disputeOrder = append(p.disputeOrder, id)
	}
	return d
}

// decide returns the events the delivery adds, applying each to p as it is
// emitted so that later facts of the same delivery see the earlier ones.
// A delivery already applied (same dedup key) adds nothing.
func (p *Payment) decide(in delivery.Event) ([]Event, error) {
	if p.applied[in.DedupKey] {
		return nil, nil
	}
	overflowed := p.overflowed
	d := &decision{p: p, subMerchant: in.SubMerchant, meta: Meta{
		Provider:   in.Provider,
		PaymentKey: in.PaymentKey,
		DedupKey:   in.DedupKey,
		OccurredAt: in.OccurredAt,
	}}
	for _, f := range in.Facts {
		d.fact(f)
	}
	if p.overflowed && !overflowed {
		// Each amount is bounded (delivery.MaxAmount), so only thousands
		// of facts at the bound on one payment get here: refuse the
		// delivery rather than record a total that does not fit.
		return nil, fmt.Errorf("%w: payment %s: %w: its totals would leave int64 minor units",
			delivery.ErrInvalidAmount, in.PaymentKey, money.ErrOverflow)
	}
	return d.out, nil
}

// decision accumulates the events of one delivery.
type decision struct {
	p           *Payment
	meta        Meta
	subMerchant string // the delivery's (delivery.Event.SubMerchant), recorded on a capture
	out         []Event
}

func (d *decision) emit(e Event) {
	d.out = append(d.out, e)
	d.p.apply(e)
}

func (d *decision) fact(f delivery.Fact) {
	f = d.p.knownAs(f)
	if d.settlement(f) { // settle.go: a settlement line, or a webhook fact a line reported first
		d.overRefund()
		d.overReversal()
		return
	}
	switch f.Kind {
	case delivery.KindAuthorized:
		d.authorized(f)
	case delivery.KindCaptured:
		d.captured(f)
	case delivery.KindFailed:
		if !d.p.failed {
			d.emit(failedOf(d.meta, f)) // failed.go
		}
	case delivery.KindCanceled:
		if !d.p.canceled {
			d.emit(Canceled{Meta: d.meta, Reason: delivery.TruncateReason(f.Reason)})
		}
	case delivery.KindRefunded:
		d.refunded(f)
	case delivery.KindRefundFailed:
		d.refundFailed(f)
	case delivery.KindRefundCumulative:
		d.refundCumulative(f) // cumulative.go
	case delivery.KindRefundAbnormal:
		d.refundNoted(f) // cumulative.go
	case delivery.KindRefundClosed:
		d.refundClosed(f) // refund_closed.go
	case delivery.KindDisputeOpened, delivery.KindDisputeInquiry, delivery.KindDisputeFundsReinstated,
		delivery.KindDisputeWon, delivery.KindDisputeLost:
		d.disputed(f)
	}
	// Refund and dispute totals move with captures, refunds, reversals and
	// disputes; checking after every fact keeps the over_refund and
	// over_reversal items in step whatever the order.
	d.overRefund()
	d.overReversal()
}

// knownAs returns f under the business id the payment knows its fact by:
// its LegacyID when the payment recorded the dispute under that id and not
// under BusinessID (delivery.Fact.LegacyID), so that a dispute recorded
// before its id was derived anew is still one dispute.
func (p *Payment) knownAs(f delivery.Fact) delivery.Fact {
	if f.LegacyID == "" || f.LegacyID == f.BusinessID {
		return f
	}
	switch f.Kind {
	case delivery.KindDisputeOpened, delivery.KindDisputeInquiry, delivery.KindDisputeFundsReinstated,
		delivery.KindDisputeWon, delivery.KindDisputeLost:
		_, current := p.disputes[f.BusinessID]
		if _, old := p.disputes[f.LegacyID]; old && !current {
			f.BusinessID = f.LegacyID
		}
	}
	return f
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
	d.emit(Captured{Meta: d.meta, CaptureID: f.BusinessID, Amount: f.Amount, Fee: f.Fee, Discount: f.Discount,
		Currency: f.Currency, SubMerchant: d.subMerchant})
	// The payment now has money: refunds that were waiting for it post now,
	// in the order they arrived.
	for _, id := range p.refundOrder {
		r := p.refunds[id]
		if r.state != refundPending {
			continue
		}
		m := d.meta
		if !r.at.IsZero() {
			m.OccurredAt = r.at // its own moment (the ledger's effective_at), not the capture's
		}
		d.emit(RefundPosted{Meta: m, RefundID: id, Amount: r.amount, Currency: r.currency, WasPending: true, Total: p.reported[id],
			Discount: p.couponOf(p.coupons.byRefund[id], r.amount)})
		d.emit(Cleared{Meta: d.meta, Kind: ReconRefundBeforePayment, Key: id,
			Details: "capture " + f.BusinessID + " arrived; refund posted"})
	}
	// So do disputes: each posts what its facts add up to.
	for _, id := range p.disputeOrder {
		ds := p.disputes[id]
		if !ds.pending {
			continue
		}
		d.settleDispute(id, ds.facts)
		d.emit(Cleared{Meta: d.meta, Kind: ReconDisputeBeforePayment, Key: id,
			Details: "capture " + f.BusinessID + " arrived; dispute posted"})
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
		d.emit(RefundPending{Meta: d.meta, RefundID: f.BusinessID, Amount: f.Amount, Currency: f.Currency,
			Discount: min(f.Discount, f.Amount)})
		d.emit(Flagged{Meta: d.meta, Kind: ReconRefundBeforePayment, Key: f.BusinessID,
			Details: "refund " + f.BusinessID + " arrived before any capture; posted when a capture arrives"})
		return
	}
	d.emit(RefundPosted{Meta: d.meta, RefundID: f.BusinessID, Amount: f.Amount, Currency: f.Currency,
		Discount: p.couponOf(f.Discount, f.Amount)})
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
		d.emit(RefundReversed{Meta: d.meta, RefundID: f.BusinessID, Amount: r.amount, Currency: r.currency,
			Discount: p.coupons.byRefund[f.BusinessID]})
	case refundPending:
		d.emit(RefundReversed{Meta: d.meta, RefundID: f.BusinessID, Amount: r.amount, Currency: r.currency, WasPending: true})
		d.emit(Cleared{Meta: d.meta, Kind: ReconRefundBeforePayment, Key: f.BusinessID,
			Details: "refund failed before any capture; dropped"})
	}
}

// disputed records a dispute fact and moves the dispute's amount on the
// ledger to where the facts reported so far put it (disputeFacts.target), so
// that the ledger follows the funds the provider moved, not the order the
// reports came in:
//
//   - an inquiry (no funds) is recorded and posts nothing;
//   - opened/withdrawn moves the amount into the receivable;
//   - won or reinstated moves it back (nothing if nothing was held);
//   - lost moves it to expenses, from the receivable or, after a win, from
//     the balance. Lost is final (Adyen: CHARGEBACK, CHARGEBACK_REVERSED,
//     SECOND_CHARGEBACK): a win or reinstatement after a loss posts nothing
//     and opens a dispute_outcome_conflict item.
//
// Before the payment has a capture nothing posts: the fact is recorded as
// DisputePending and a dispute_before_payment item opens, until the capture
// arrives (captured). Amounts are always the one the dispute was first
// recorded with; a different one is flagged.
func (d *decision) disputed(f delivery.Fact) {
	p := d.p
	ds, known := p.disputes[f.BusinessID]
	if !known {
		if !d.currencyOK(f) {
			return
		}
	} else if f.Amount != ds.amount {
		d.flagOnce(ReconAmountMismatch, f.BusinessID, fmt.Sprintf("dispute %s reported as %s and as %s",
			f.BusinessID, money.FormatMinor(ds.amount, ds.currency), money.FormatMinor(f.Amount, f.Currency)))
	}
	var facts disputeFacts
	if known {
		facts = ds.facts
	}
	next := facts.with(f.Kind)
	if known && facts.lost && (f.Kind == delivery.KindDisputeWon || f.Kind == delivery.KindDisputeFundsReinstated) {
		d.flagOnce(ReconDisputeOutcomeConflict, f.BusinessID, fmt.Sprintf("dispute %s reported %s after it was lost; the loss stands",
			f.BusinessID, f.Kind))
		return
	}
	if known && next == facts {
		return // nothing new
	}
	if len(p.captures) == 0 {
		amount, cur := f.Amount, f.Currency
		if known {
			amount, cur = ds.amount, ds.currency
		}
		d.emit(DisputePending{Meta: d.meta, DisputeID: f.BusinessID, Fact: string(f.Kind), Amount: amount, Currency: cur})
		if k := (reconKey{ReconDisputeBeforePayment, f.BusinessID}); !p.open[k] {
			d.emit(Flagged{Meta: d.meta, Kind: k.kind, Key: k.key,
				Details: "dispute " + f.BusinessID + " arrived before any capture; posted when a capture arrives"})
		}
		return
	}
	if !known {
		if next.target() == stageNone || next.target() == stageReleased && !next.withdrawn {
			// An inquiry, or a win with no funds ever withdrawn.
			d.emit(DisputeInquiry{Meta: d.meta, DisputeID: f.BusinessID, Amount: f.Amount, Currency: f.Currency,
				Reason: delivery.TruncateReason(f.Reason)})
		} else {
			d.emit(DisputeOpened{Meta: d.meta, DisputeID: f.BusinessID, Amount: f.Amount, Currency: f.Currency})
			ds = p.disputes[f.BusinessID]
			ds.facts = ds.facts.with(delivery.KindDisputeOpened)
		}
	}
	d.settleDispute(f.BusinessID, next)
}

// settleDispute emits the events that move dispute id from where the ledger
// has it to where facts put it, recording each fact on the way.
func (d *decision) settleDispute(id string, facts disputeFacts) {
	ds := d.p.disputes[id]
	m, amt, cur := d.meta, ds.amount, ds.currency
	target := facts.target()
	if ds.posted == stageNone && facts.withdrawn {
		// The funds left first, whatever order the reports came in: a win
		// reported before the withdrawal (a crash, a redelivery) still
		// posts both movements once the withdrawal is known, so the entries
		// do not depend on arrival order.
		d.emit(DisputeFundsWithdrawn{Meta: m, DisputeID: id, Amount: amt, Currency: cur})
	}
	switch target {
	case stageReleased:
		switch {
		case ds.posted == stageHeld && facts.won && !ds.won:
			d.emit(DisputeWon{Meta: m, DisputeID: id, Amount: amt, Currency: cur})
		case ds.posted == stageHeld:
			d.emit(DisputeFundsReinstated{Meta: m, DisputeID: id, Amount: amt, Currency: cur})
		}
		if facts.won && !ds.won {
			d.emit(DisputeWon{Meta: m, DisputeID: id, Amount: amt, Currency: cur, NoFunds: true})
		}
	case stageLost:
		if ds.posted != stageLost {
			d.emit(DisputeLost{Meta: m, DisputeID: id, Amount: amt, Currency: cur, ReversesWin: ds.posted == stageReleased})
		}
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

// overReversal keeps the payment's single over_reversal item in step: open
// while posted refunds plus the disputed amounts the provider holds or took
// exceed the captures while refunds alone do not (a customer who disputes
// after being refunded), cleared when captures catch up, a dispute's funds
// come back, or refunds alone exceed the captures: one problem, one item,
// and refunds over the captures are over_refund's (docs/reference.md,
// reconciliation kinds). An item opened beside over_refund before that rule
// (overReversalBeside) clears as it did then, when refunds plus disputes
// are back within the captures: stored items stay as they are. Nothing is
// refused: the money has left.
func (d *decision) overReversal() {
	p := d.p
	k := reconKey{ReconOverReversal, overReversalKey}
	reversed := money.SaturatingAdd(p.refunded, p.disputedOut)
	over := reversed > p.captured && p.refunded <= p.captured
	if p.open[k] && p.overReversalBeside {
		over = reversed > p.captured
	}
	details := fmt.Sprintf("refunds %s plus disputes %s against captures %s",
		money.FormatMinor(p.refunded, p.currency), money.FormatMinor(p.disputedOut, p.currency),
		money.FormatMinor(p.captured, p.currency))
	switch {
	case over && !p.open[k]:
		d.emit(Flagged{Meta: d.meta, Kind: k.kind, Key: k.key, Details: details + " exceed them"})
	case !over && p.open[k] && reversed > p.captured:
		d.emit(Cleared{Meta: d.meta, Kind: k.kind, Key: k.key, Details: details + ": refunds alone exceed them (over_refund)"})
	case !over && p.open[k]:
		d.emit(Cleared{Meta: d.meta, Kind: k.kind, Key: k.key, Details: details + " are within them"})
	}
}
