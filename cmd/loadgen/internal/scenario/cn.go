package scenario

import (
	"fmt"
	"time"

	"github.com/onceledger/onceledger/cmd/loadgen/internal/sign"
)

// Alipay and WeChat Pay, told as their notifications tell a payment
// (docs/reference.md, "Webhooks"): CNY only, no fee (their notifications
// carry none: fees come from the bills), no disputes and no payout
// notifications (withdrawals come from the bills too).
//
// Alipay (trade_status_sync, form-encoded, RSA2-signed in the body):
// TRADE_SUCCESS captures total_amount; each refund is a notification whose
// refund_fee is the trade's refunded total so far (TRADE_CLOSED once the
// whole amount is refunded), named by out_biz_no; some refund-less trades
// are also notified TRADE_FINISHED (moves nothing after the capture); a
// declined payment is an unpaid TRADE_CLOSED (posts nothing).
//
// WeChat Pay (API v3, resource encrypted, headers signed per attempt by the
// sender): TRANSACTION.SUCCESS captures amount.total; REFUND.SUCCESS refunds
// amount.refund, some refunds first notified REFUND.ABNORMAL (not final,
// posts nothing). WeChat notifies only successful payments, so every
// generated WeChat payment is captured.

// CN is what the generator needs to write Alipay and WeChat Pay bodies.
type CN struct {
	Alipay      *sign.Alipay    // signs Alipay bodies (their signature is in the body)
	AlipayAppID string          // app_id: one the server accepts
	Wechatpay   *sign.Wechatpay // encrypts WeChat resources (the sender signs the headers)
	MchID       string          // mchid: one the server accepts
}

func (c CN) check(p string) error {
	switch {
	case p == Alipay && (c.Alipay == nil || c.AlipayAppID == ""):
		return fmt.Errorf("%w: alipay needs a signing key and an app_id", ErrConfig)
	case p == Wechatpay && (c.Wechatpay == nil || c.MchID == ""):
		return fmt.Errorf("%w: wechatpay needs a signing key, an APIv3 key and an mchid", ErrConfig)
	}
	return nil
}

func isCN(p string) bool { return p == Alipay || p == Wechatpay }

// cnShape is a shape told in CNY, without fee or dispute.
func (g *Generator) cnShape(p string) shape {
	s := g.shape()
	s.currency, s.fee, s.dispute, s.outcome = "CNY", 0, 0, ""
	if p == Wechatpay && !s.captured {
		s.captured = true // WeChat notifies successful payments only
	}
	return s
}

// yuan writes fen as Alipay's decimal yuan.
func yuan(fen int64) string { return fmt.Sprintf("%d.%02d", fen/100, fen%100) }

// alipayTime is Alipay's "yyyy-MM-dd HH:mm:ss", Beijing time.
func alipayTime(t time.Time) string {
	return t.In(time.FixedZone("CST", 8*3600)).Format(time.DateTime)
}

func (g *Generator) alipayPayment(s shape) (string, []draft) {
	trade := "2026" + g.next()
	created := g.clock
	var ds []draft
	add := func(status string, ph phase, extra func(delta int64) map[string]string) {
		id, at := "ali_"+g.next(), g.clock
		ds = append(ds, draft{provider: Alipay, id: id, typ: status, phase: ph, build: func(delta int64) []byte {
			p := map[string]string{
				"notify_time": alipayTime(at.Add(time.Second)), "notify_type": "trade_status_sync", "notify_id": id,
				"app_id": g.cfg.CN.AlipayAppID, "charset": "utf-8", "version": "1.0", "trade_no": trade,
				"out_trade_no": "o" + trade, "trade_status": status, "total_amount": yuan(s.amount),
				"gmt_create": alipayTime(created), "subject": "loadgen 订单 " + trade,
			}
			for k, v := range extra(delta) {
				p[k] = v
			}
			body, err := g.cfg.CN.Alipay.Body(p)
			if err != nil {
				panic(fmt.Sprintf("scenario: alipay signer checked at start failed: %v", err))
			}
			return body
		}})
	}
	paid := func(delta int64) map[string]string {
		return map[string]string{"total_amount": yuan(s.amount + delta), "receipt_amount": yuan(s.amount + delta),
			"buyer_pay_amount": yuan(s.amount + delta), "gmt_payment": alipayTime(created.Add(3 * time.Second))}
	}
	if !s.captured {
		add("TRADE_CLOSED", phaseCapture, func(int64) map[string]string {
			return map[string]string{"gmt_close": alipayTime(created.Add(time.Hour))}
		})
		return trade, ds
	}
	add("TRADE_SUCCESS", phaseCapture, paid)
	var cumulative int64
	for _, r := range s.refunds {
		cumulative += r
		total, biz, at := cumulative, "rf_"+g.next(), g.clock
		status := "TRADE_SUCCESS"
		if total == s.amount {
			status = "TRADE_CLOSED" // a full refund closes the trade
		}
		add(status, phaseAfter, func(delta int64) map[string]string {
			m := paid(0)
			m["refund_fee"], m["out_biz_no"], m["gmt_refund"] = yuan(total+delta), biz, alipayTime(at)
			return m
		})
	}
	if len(s.refunds) == 0 && g.rng.IntN(10) < 3 {
		add("TRADE_FINISHED", phaseAfter, paid) // no longer refundable: moves nothing
	}
	return trade, ds
}

func (g *Generator) wechatpayPayment(s shape) (string, []draft) {
	tx := "4200" + g.next()
	var ds []draft
	add := func(typ string, ph phase, content func(delta int64) map[string]any) {
		id, at := "wx_"+g.next(), g.clock
		ds = append(ds, draft{provider: Wechatpay, id: id, typ: typ, phase: ph, build: func(delta int64) []byte {
			body, err := g.cfg.CN.Wechatpay.Body(id, typ, at, content(delta))
			if err != nil {
				panic(fmt.Sprintf("scenario: wechatpay encryption checked at start failed: %v", err))
			}
			return body
		}})
	}
	success := g.clock.In(time.FixedZone("CST", 8*3600)).Format(time.RFC3339)
	add("TRANSACTION.SUCCESS", phaseCapture, func(d int64) map[string]any {
		return map[string]any{"mchid": g.cfg.CN.MchID, "appid": "wxd678efh567hg6787", "transaction_id": tx,
			"out_trade_no": "o" + tx, "trade_type": "JSAPI", "trade_state": "SUCCESS", "trade_state_desc": "支付成功",
			"bank_type": "OTHERS", "success_time": success, "payer": map[string]any{"openid": "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o"},
			"amount": map[string]any{"total": s.amount + d, "payer_total": s.amount + d, "currency": "CNY", "payer_currency": "CNY"}}
	})
	for _, r := range s.refunds {
		ref := "5030" + g.next()
		refund := func(status string) func(int64) map[string]any {
			return func(d int64) map[string]any {
				return map[string]any{"mchid": g.cfg.CN.MchID, "transaction_id": tx, "out_trade_no": "o" + tx,
					"refund_id": ref, "out_refund_no": "o" + ref, "refund_status": status, "success_time": success,
					"user_received_account": "支付用户零钱",
					"amount":                map[string]any{"total": s.amount, "refund": r + d, "payer_total": s.amount, "payer_refund": r + d}}
			}
		}
		if g.rng.IntN(10) < 2 {
			add("REFUND.ABNORMAL", phaseAfter, refund("ABNORMAL")) // not final: posts nothing
		}
		add("REFUND.SUCCESS", phaseAfter, refund("SUCCESS"))
	}
	return tx, ds
}
