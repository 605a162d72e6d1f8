package scenario

import (
	"strings"
	"time"

	"github.com/onceledger/onceledger/cmd/loadgen/internal/model"
)

// Stripe ids look like evt_…, pi_…, ch_…; only uniqueness matters here.
func (g *Generator) stripeID(prefix string) string { return prefix + "_" + g.next() }

// stripeEvent wraps object in Stripe's event envelope (fields as of API
// version 2025-08-27.basil; only some are read by onceledger).
func stripeEvent(id, typ string, created time.Time, object map[string]any) []byte {
	return mustJSON(map[string]any{
		"id": id, "object": "event", "api_version": "2025-08-27.basil",
		"created": created.Unix(), "livemode": false, "pending_webhooks": 1,
		"request": map[string]any{"id": nil, "idempotency_key": nil},
		"type":    typ,
		"data":    map[string]any{"object": object},
	})
}

// stripePayment tells s as Stripe does for a card PaymentIntent with
// automatic capture. The capture is reported twice, by charge.succeeded and
// payment_intent.succeeded (two event ids, one charge id): onceledger records
// it once, from whichever arrives first. Both therefore carry the fee:
// charge.succeeded with its balance_transaction expanded, and
// payment_intent.succeeded with latest_charge (and its balance transaction)
// expanded. Without expansion Stripe sends ids only and the normalized fee is
// 0 ("unknown"); onceledger then records the fee from whichever report
// carries it (payment.fee_recorded), so either way the ledger does not depend
// on arrival order — this generator sends it on both to exercise the capture
// path with fees.
func (g *Generator) stripePayment(s shape) (string, []draft) {
	pi, ch, txn := g.stripeID("pi"), g.stripeID("ch"), g.stripeID("txn")
	cur := strings.ToLower(s.currency)
	var ds []draft
	add := func(typ string, ph phase, obj func(delta int64) map[string]any) {
		id, at := g.stripeID("evt"), g.clock
		ds = append(ds, draft{provider: Stripe, id: id, typ: typ, phase: ph,
			build: func(delta int64) []byte { return stripeEvent(id, typ, at, obj(delta)) }})
	}
	created := g.clock.Unix()
	intent := func(status string, delta int64) map[string]any {
		return map[string]any{
			"id": pi, "object": "payment_intent", "amount": s.amount + delta, "currency": cur,
			"capture_method": "automatic", "created": created, "customer": "cus_" + g.cfg.RunID,
			"latest_charge": nil, "status": status, "payment_method_types": []string{"card"},
			"metadata": map[string]any{"order_id": pi},
		}
	}
	add("payment_intent.created", phaseBefore, func(d int64) map[string]any { return intent("requires_payment_method", d) })
	if !s.captured {
		add("payment_intent.payment_failed", phaseCapture, func(d int64) map[string]any {
			o := intent("requires_payment_method", d)
			o["last_payment_error"] = map[string]any{"code": "card_declined", "decline_code": "insufficient_funds", "message": "Your card has insufficient funds.", "type": "card_error"}
			return o
		})
		return pi, ds
	}
	charge := func(delta, refunded int64, expandBT bool) map[string]any {
		amount := s.amount + delta
		var bt any = txn
		if expandBT {
			bt = map[string]any{"id": txn, "object": "balance_transaction", "amount": amount, "currency": cur,
				"fee": s.fee, "net": amount - s.fee, "reporting_category": "charge", "status": "pending", "type": "charge",
				"fee_details": []any{map[string]any{"amount": s.fee, "currency": cur, "description": "Stripe processing fees", "type": "stripe_fee"}}}
		}
		return map[string]any{
			"id": ch, "object": "charge", "amount": amount, "amount_captured": amount, "amount_refunded": refunded,
			"balance_transaction": bt, "captured": true, "created": created, "currency": cur, "paid": true,
			"payment_intent": pi, "refunded": refunded == amount, "status": "succeeded",
		}
	}
	add("charge.succeeded", phaseCapture, func(d int64) map[string]any { return charge(d, 0, true) })
	add("payment_intent.succeeded", phaseCapture, func(d int64) map[string]any {
		o := intent("succeeded", d)
		o["amount_received"] = s.amount + d
		o["amount_capturable"] = 0
		o["latest_charge"] = charge(d, 0, true)
		return o
	})
	var cumulative int64
	for _, r := range s.refunds {
		re := g.stripeID("re")
		cumulative += r
		sofar, at := cumulative, g.clock.Unix()
		add("refund.created", phaseAfter, func(d int64) map[string]any {
			return map[string]any{"id": re, "object": "refund", "amount": r + d, "charge": ch, "currency": cur,
				"payment_intent": pi, "reason": "requested_by_customer", "status": "succeeded", "created": at}
		})
		// charge.refunded without the (no longer included) refunds list
		// carries no facts: the server answers "ignored".
		add("charge.refunded", phaseAfter, func(d int64) map[string]any { return charge(d, sofar, false) })
	}
	if s.dispute > 0 {
		du := g.stripeID("du")
		dispute := func(status string, d int64) map[string]any {
			return map[string]any{"id": du, "object": "dispute", "amount": s.dispute + d, "charge": ch, "currency": cur,
				"payment_intent": pi, "reason": "fraudulent", "status": status, "is_charge_refundable": false}
		}
		add("charge.dispute.created", phaseAfter, func(d int64) map[string]any { return dispute("needs_response", d) })
		if s.outcome != "" {
			add("charge.dispute.closed", phaseAfter, func(d int64) map[string]any { return dispute(s.outcome, d) })
		}
	}
	return pi, ds
}

// standardEvent is the Standard provider's body (docs/reference.md).
func standardEvent(typ string, at time.Time, data map[string]any) []byte {
	return mustJSON(map[string]any{"type": typ, "timestamp": at.UTC().Format(time.RFC3339), "data": data})
}

func (g *Generator) standardID(prefix string) string { return prefix + "_" + g.next() }

// standardPayment tells s with the Standard provider's event types.
func (g *Generator) standardPayment(s shape) (string, []draft) {
	pay := g.standardID("pay")
	var ds []draft
	add := func(typ string, ph phase, data func(delta int64) map[string]any) {
		id, at := g.standardID("msg"), g.clock
		ds = append(ds, draft{provider: Standard, id: id, typ: typ, phase: ph,
			build: func(delta int64) []byte { return standardEvent(typ, at, data(delta)) }})
	}
	money := func(extra map[string]any, amount int64) func(int64) map[string]any {
		return func(d int64) map[string]any {
			m := map[string]any{"payment_id": pay, "amount": amount + d, "currency": s.currency}
			for k, v := range extra {
				m[k] = v
			}
			return m
		}
	}
	add("payment.authorized", phaseBefore, money(nil, s.amount))
	if !s.captured {
		add("payment.failed", phaseCapture, money(map[string]any{"reason": "card_declined"}, s.amount))
		return pay, ds
	}
	add("payment.captured", phaseCapture, money(map[string]any{"capture_id": g.standardID("cap"), "fee": s.fee}, s.amount))
	for _, r := range s.refunds {
		add("refund.succeeded", phaseAfter, money(map[string]any{"refund_id": g.standardID("ref")}, r))
	}
	if s.dispute > 0 {
		du := g.standardID("dsp")
		add("dispute.opened", phaseAfter, money(map[string]any{"dispute_id": du, "reason": "fraudulent"}, s.dispute))
		if s.outcome != "" {
			add("dispute."+s.outcome, phaseAfter, money(map[string]any{"dispute_id": du}, s.dispute))
		}
	}
	return pay, ds
}

// payout is a payout.paid of amount, its own lifecycle.
func (g *Generator) payout(p, currency string, amount int64) Lifecycle {
	lc := Lifecycle{Provider: p, Payout: true,
		Facts: []model.Fact{{Provider: p, Kind: model.Payout, Currency: currency, Amount: amount}}}
	var d draft
	if p == Stripe {
		po, id, at := g.stripeID("po"), g.stripeID("evt"), g.clock
		lc.Key = po
		d = draft{provider: Stripe, id: id, typ: "payout.paid", build: func(delta int64) []byte {
			return stripeEvent(id, "payout.paid", at, map[string]any{"id": po, "object": "payout", "amount": amount + delta,
				"currency": strings.ToLower(currency), "status": "paid", "arrival_date": at.Unix(), "method": "standard", "type": "bank_account"})
		}}
	} else {
		po, id, at := g.standardID("po"), g.standardID("msg"), g.clock
		lc.Key = po
		d = draft{provider: Standard, id: id, typ: "payout.paid", build: func(delta int64) []byte {
			return standardEvent("payout.paid", at, map[string]any{"payout_id": po, "amount": amount + delta, "currency": currency})
		}}
	}
	g.finish(&lc, []draft{d})
	return lc
}
