package payment

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/settlement"
)

// alipayRefundLine is an Alipay trade-bill refund row of trade_1: its own
// amount (商家实收), never the trade's refunded total.
func alipayRefundLine(refund string, amount int64) delivery.Event {
	return settled(settlement.Line{Provider: "alipay", Kind: settlement.KindRefund, SourceType: "退款",
		Key: "refund:trade_1:" + refund, PaymentKey: "trade_1", CaptureID: "trade_1", RefundID: refund,
		Gross: -amount, Net: -amount, Currency: "CNY", OriginalAmount: -amount, OriginalCurrency: "CNY",
		OccurredAt: t0, CumulativeRefund: true})
}

// TestRefundLineThenItsCumulativeNotification: a refund recorded from its
// bill line, then its notification (refund_fee = the trade's total): the
// refund posts once and the missing_webhook item clears; a later refund's
// notification posts only its increase over the refunds the lines
// recorded (docs/reference.md, Alipay: "the bill's per-refund amounts
// settle the lines without posting again").
func TestRefundLineThenItsCumulativeNotification(t *testing.T) {
	s := &stream{t: t}
	s.deliver(alipayDelivery("n_pay", cny(delivery.KindCaptured, "trade_1", 10000)))
	s.deliver(alipayRefundLine("R1", 3000))
	assert.Equal(t, map[string]string{ReconMissingWebhook: "R1"}, openKinds(s.history))
	s.deliver(alipayDelivery("n_r1", cny(delivery.KindRefundCumulative, "R1", 3000)))
	assert.Equal(t, int64(3000), refundsPosted(s.history))
	assert.Empty(t, openItems(s.history))

	s.deliver(alipayDelivery("n_r2", cny(delivery.KindRefundCumulative, "R2", 5000)))
	assert.Equal(t, int64(5000), refundsPosted(s.history), "R2 posts 20.00: R1's 30.00 is in its total")
	s.deliver(alipayRefundLine("R2", 2000))
	assert.Equal(t, int64(5000), refundsPosted(s.history))
	assert.Empty(t, openItems(s.history))
}

// TestCumulativeRefundOrders: every order of R1's and R2's lines and
// notifications, the notifications delivered or dropped: the refunds end
// equal to the lines' sum, never exceed the refunds really made at any
// point, and a missing_webhook item is open for exactly each dropped
// notification.
func TestCumulativeRefundOrders(t *testing.T) {
	type step struct {
		name string
		ev   delivery.Event
	}
	all := []step{
		{"line R1", alipayRefundLine("R1", 3000)},
		{"line R2", alipayRefundLine("R2", 2000)},
		{"notify R1", alipayDelivery("n_r1", cny(delivery.KindRefundCumulative, "R1", 3000))},
		{"notify R2", alipayDelivery("n_r2", cny(delivery.KindRefundCumulative, "R2", 5000))},
	}
	for drop := range 4 { // 0,1: no drop; 2: R1's notification dropped; 3: R2's
		steps := append([]step{}, all[:2]...)
		for i, st := range all[2:] {
			if drop != i+2 {
				steps = append(steps, st)
			}
		}
		permute(steps, func(order []step) {
			s := &stream{t: t}
			s.deliver(alipayDelivery("n_pay", cny(delivery.KindCaptured, "trade_1", 10000)))
			var names []string
			for _, st := range order {
				names = append(names, st.name)
				s.deliver(st.ev)
				require.LessOrEqual(t, refundsPosted(s.history), int64(5000), "%v", names)
			}
			assert.Equal(t, int64(5000), refundsPosted(s.history), "%v", names)
			want := map[reconKey]bool{}
			if drop >= 2 {
				want[reconKey{ReconMissingWebhook, fmt.Sprintf("R%d", drop-1)}] = true
			}
			assert.Equal(t, want, openItems(s.history), "%v", names)
		})
	}
}

// TestPropertyCumulativeRefundsWithLines: a trade's refunds reported by
// bill lines (all of them) and by cumulative notifications (some dropped,
// some duplicated), in any order: refunds end equal to the lines' sum,
// never exceed the refunds made, and exactly the dropped notifications'
// refunds keep a missing_webhook item.
func TestPropertyCumulativeRefundsWithLines(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 96))
		events := []delivery.Event{alipayDelivery("n_pay", cny(delivery.KindCaptured, "trade_1", 100000))}
		total, dropped := int64(0), map[reconKey]bool{}
		for i := range 1 + rng.IntN(5) {
			id := fmt.Sprintf("R%d", i)
			amount := 1 + rng.Int64N(15000)
			total += amount
			events = append(events, alipayRefundLine(id, amount))
			if rng.IntN(4) == 0 {
				dropped[reconKey{ReconMissingWebhook, id}] = true
				continue
			}
			events = append(events, alipayDelivery("n_"+id, cny(delivery.KindRefundCumulative, id, total)))
			if rng.IntN(3) == 0 {
				dup := events[len(events)-1]
				dup.DedupKey += "_retry"
				events = append(events, dup)
			}
		}
		rng.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
		s := &stream{t: t}
		for _, ev := range events {
			s.deliver(ev)
			require.LessOrEqual(t, refundsPosted(s.history), total, "seed %d", seed)
		}
		require.Equal(t, total, refundsPosted(s.history), "seed %d", seed)
		require.Equal(t, dropped, openItems(s.history), "seed %d", seed)
	}
}

// permute calls f with every order of steps.
func permute[T any](steps []T, f func([]T)) {
	var rec func(int)
	rec = func(k int) {
		if k == len(steps) {
			f(steps)
			return
		}
		for i := k; i < len(steps); i++ {
			steps[k], steps[i] = steps[i], steps[k]
			rec(k + 1)
			steps[k], steps[i] = steps[i], steps[k]
		}
	}
	rec(0)
}

// TestWeChatRefundLinesAndNotificationsPostOnce: WeChat Pay's
// REFUND.SUCCESS reports each refund's own amount (amount.refund), as its
// bill line does: a line and its notification, in either order, post the
// refund once and leave no item.
func TestWeChatRefundLinesAndNotificationsPostOnce(t *testing.T) {
	line := func(refund string, amount int64) delivery.Event {
		return settled(settlement.Line{Provider: "wechatpay", Kind: settlement.KindRefund, SourceType: "REFUND",
			Key: "refund:" + refund, PaymentKey: "tx_1", CaptureID: "tx_1", RefundID: refund,
			Gross: -amount, Net: -amount, Currency: "CNY", OriginalAmount: -amount, OriginalCurrency: "CNY", OccurredAt: t0})
	}
	notify := func(key, refund string, amount int64) delivery.Event {
		ev := deliveryOf(key, cny(delivery.KindRefunded, refund, amount))
		ev.Provider, ev.PaymentKey = "wechatpay", "tx_1"
		return ev
	}
	s := &stream{t: t}
	pay := deliveryOf("n_pay", cny(delivery.KindCaptured, "tx_1", 10000))
	pay.Provider, pay.PaymentKey = "wechatpay", "tx_1"
	s.deliver(pay)
	s.deliver(line("R1", 3000))
	s.deliver(notify("n_r1", "R1", 3000))
	s.deliver(notify("n_r2", "R2", 2000))
	s.deliver(line("R2", 2000))
	assert.Equal(t, int64(5000), refundsPosted(s.history))
	assert.Empty(t, openItems(s.history))
}
