package payment

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/ledger"
)

func cny(k delivery.Kind, id string, amount int64) delivery.Fact {
	return delivery.Fact{Kind: k, BusinessID: id, Amount: amount, Currency: "CNY"}
}

func alipayDelivery(key string, facts ...delivery.Fact) delivery.Event {
	ev := deliveryOf(key, facts...)
	ev.Provider, ev.PaymentKey = "alipay", "trade_1"
	return ev
}

func refundsPosted(history []Event) int64 {
	return balances(history)[balanceKey{ledger.RevenueRefunds, "CNY"}]
}

func TestCumulativeRefundPostsTheIncrease(t *testing.T) {
	s := &stream{t: t}
	s.deliver(alipayDelivery("n_pay", cny(delivery.KindCaptured, "trade_1", 10000)))
	wantTypes(t, s.deliver(alipayDelivery("n_r2", cny(delivery.KindRefundCumulative, "biz_2", 5000))), TypeRefundPosted)
	assert.Equal(t, int64(5000), refundsPosted(s.history))
	// An earlier refund's notification, arriving late: its total is below
	// the highest seen, so it posts nothing; it is recorded (its bill line
	// then opens no missing_webhook).
	wantTypes(t, s.deliver(alipayDelivery("n_r1", cny(delivery.KindRefundCumulative, "biz_1", 3000))), TypeRefundNoted)
	wantTypes(t, s.deliver(alipayDelivery("n_r3", cny(delivery.KindRefundCumulative, "biz_3", 7000))), TypeRefundPosted)
	assert.Equal(t, int64(7000), refundsPosted(s.history))
	wantTypes(t, s.deliver(alipayDelivery("n_r3_again", cny(delivery.KindRefundCumulative, "biz_3", 7000))))
	out := s.deliver(alipayDelivery("n_r3_other", cny(delivery.KindRefundCumulative, "biz_3", 8000)))
	wantTypes(t, out, TypeFlagged)
	wantItem(t, out[0], ReconAmountMismatch, "biz_3")
	assert.Equal(t, int64(7000), refundsPosted(s.history), "a disagreeing total posts nothing")
}

func TestCumulativeRefundBeforeCapture(t *testing.T) {
	s := &stream{t: t}
	out := s.deliver(alipayDelivery("n_r1", cny(delivery.KindRefundCumulative, "biz_1", 3000)))
	wantTypes(t, out, TypeRefundPending, TypeFlagged)
	s.deliver(alipayDelivery("n_pay", cny(delivery.KindCaptured, "trade_1", 10000)))
	wantTypes(t, s.deliver(alipayDelivery("n_r2", cny(delivery.KindRefundCumulative, "biz_2", 5000))), TypeRefundPosted)
	assert.Equal(t, int64(5000), refundsPosted(s.history))
	assert.Empty(t, openItems(s.history))
}

// TestPropertyCumulativeRefunds: whatever the order of a trade's
// notifications (its capture and refunds reporting growing totals at
// growing gmt_refund) and however often each is delivered, under its own
// or a new notify_id, the refunds posted never exceed the highest total
// delivered so far and end equal to the highest total reported, each
// refund booked at its own time.
func TestPropertyCumulativeRefunds(t *testing.T) {
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 25))
		var events []delivery.Event
		events = append(events, alipayDelivery("n_pay", cny(delivery.KindCaptured, "trade_1", 100000)))
		total := int64(0)
		own := map[time.Time]int64{} // each refund at its own gmt_refund
		for i := range 1 + rng.IntN(6) {
			amount := 1 + rng.Int64N(15000)
			total += amount
			at := t0.Add(time.Duration(i+1) * time.Hour)
			own[at] = amount
			events = append(events, alipayRefundAt(fmt.Sprintf("n_r%d", i), fmt.Sprintf("biz_%d", i), total, at))
		}
		for range rng.IntN(6) {
			dup := events[rng.IntN(len(events))]
			if rng.IntN(2) == 0 {
				dup.DedupKey += "_retry" // Alipay's notify_id is kept; a re-sent refund under another one must not post again
			}
			events = append(events, dup)
		}
		rng.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
		s := &stream{t: t}
		highest := int64(0)
		for _, ev := range events {
			s.deliver(ev)
			if f := ev.Facts[0]; f.Kind == delivery.KindRefundCumulative {
				highest = max(highest, f.Amount)
			}
			posted := refundsPosted(s.history)
			require.LessOrEqualf(t, posted, highest, "seed %d: refunds above the highest total reported", seed)
		}
		require.Equalf(t, total, refundsPosted(s.history), "seed %d", seed)
		require.Equalf(t, own, refundsByTime(s.history), "seed %d: each refund booked at its own time", seed)
		require.Emptyf(t, openItems(s.history), "seed %d", seed)
	}
}

func TestCaptureDiscount(t *testing.T) {
	s := &stream{t: t}
	f := cny(delivery.KindCaptured, "trade_1", 10000)
	f.Discount = 800
	s.deliver(alipayDelivery("n_pay", f))
	b := balances(s.history)
	assert.Equal(t, int64(9200), b[balanceKey{ledger.ProviderBalance("alipay"), "CNY"}])
	assert.Equal(t, int64(800), b[balanceKey{ledger.ProviderDiscounts("alipay"), "CNY"}])
	assert.Equal(t, int64(-10000), b[balanceKey{ledger.RevenueSales, "CNY"}])
	// TRADE_FINISHED after TRADE_SUCCESS reports the same capture: nothing.
	wantTypes(t, s.deliver(alipayDelivery("n_finished", f)))
}

func TestRefundNotedPostsNothing(t *testing.T) {
	s := &stream{t: t}
	wx := func(key string, f delivery.Fact) delivery.Event {
		ev := deliveryOf(key, f)
		ev.Provider, ev.PaymentKey, ev.SubMerchant = "wechatpay", "tx_1", "1900000109"
		return ev
	}
	out := s.deliver(wx("n_pay", cny(delivery.KindCaptured, "tx_1", 10000)))
	require.Len(t, out, 1)
	assert.Equal(t, "1900000109", out[0].(Captured).SubMerchant)
	wantTypes(t, s.deliver(wx("n_abn", cny(delivery.KindRefundAbnormal, "r_1", 300))), TypeRefundNoted)
	wantTypes(t, s.deliver(wx("n_abn2", cny(delivery.KindRefundAbnormal, "r_1", 300)))) // recorded once
	assert.Zero(t, refundsPosted(s.history))
	// Not final: the success that follows posts.
	wantTypes(t, s.deliver(wx("n_ok", cny(delivery.KindRefunded, "r_1", 300))), TypeRefundPosted)
	wantTypes(t, s.deliver(wx("n_closed", cny(delivery.KindRefundClosed, "r_2", 200))), TypeRefundNoted)
	assert.Equal(t, int64(300), refundsPosted(s.history))
	assert.Empty(t, openItems(s.history))
}

// refundsByTime sums the refunds posted by the moment they are effective
// (the event's OccurredAt: an Alipay refund notification's gmt_refund).
func refundsByTime(history []Event) map[time.Time]int64 {
	out := map[time.Time]int64{}
	for _, e := range history {
		for _, p := range Postings(e) {
			if p.Account == ledger.RevenueRefunds {
				out[e.Metadata().OccurredAt] += p.Amount
			}
		}
	}
	for k, v := range out {
		if v == 0 {
			delete(out, k)
		}
	}
	return out
}

func alipayRefundAt(key, id string, total int64, at time.Time) delivery.Event {
	ev := alipayDelivery(key, cny(delivery.KindRefundCumulative, id, total))
	ev.OccurredAt = at
	return ev
}

// TestCumulativeRefundOutOfOrderBookedAtItsOwnTime: two refunds of 30.00
// (gmt_refund t1) and 20.00 (t2), whose notifications report the trade's
// refunded totals 30.00 and 50.00, arrive in the opposite order. The later
// one posts the whole 50.00 at t2 (nothing else is known then); when the
// earlier one's notification arrives, its 30.00 is booked at t1, its own
// time, and moved off t2: each refund ends booked at its own time.
func TestCumulativeRefundOutOfOrderBookedAtItsOwnTime(t *testing.T) {
	t1, t2 := t0.Add(time.Hour), t0.Add(2*time.Hour)
	s := &stream{t: t}
	s.deliver(alipayDelivery("n_pay", cny(delivery.KindCaptured, "trade_1", 10000)))
	s.deliver(alipayRefundAt("n_r2", "biz_2", 5000, t2))
	assert.Equal(t, map[time.Time]int64{t2: 5000}, refundsByTime(s.history))
	s.deliver(alipayRefundAt("n_r1", "biz_1", 3000, t1))
	assert.Equal(t, map[time.Time]int64{t1: 3000, t2: 2000}, refundsByTime(s.history))
	assert.Equal(t, int64(5000), refundsPosted(s.history))
	// Redelivered (another notify_id), and the bill's rows: nothing more.
	wantTypes(t, s.deliver(alipayRefundAt("n_r1_again", "biz_1", 3000, t1)))
	assert.Equal(t, map[time.Time]int64{t1: 3000, t2: 2000}, refundsByTime(s.history))
	assert.Empty(t, openItems(s.history))
}

// The coupon part moves too, as far as the later refund's remaining amount
// cannot hold it: a 100.00 trade of which 20.00 is a merchant coupon
// (receipt 80.00), refunded 90.00 at t1 (refund_fee 90.00, coupon 10.00)
// and 10.00 at t2 (refund_fee 100.00, coupon 20.00), notified in the
// opposite order: each refund ends with its own amount and coupon at its
// own time, as if they had come in order.
func TestCumulativeRefundOutOfOrderMovesTheCoupon(t *testing.T) {
	t1, t2 := t0.Add(time.Hour), t0.Add(2*time.Hour)
	at := func(key, id string, total, coupon int64, when time.Time) delivery.Event {
		f := cny(delivery.KindRefundCumulative, id, total)
		f.Discount = coupon
		ev := alipayDelivery(key, f)
		ev.OccurredAt = when
		return ev
	}
	byTime := func(history []Event) map[string]int64 {
		out := map[string]int64{}
		for _, e := range history {
			for _, p := range Postings(e) {
				if p.Account == ledger.RevenueRefunds || p.Account == ledger.ProviderDiscounts("alipay") {
					out[fmt.Sprintf("%s@%s", p.Account, e.Metadata().OccurredAt.Sub(t0))] += p.Amount
				}
			}
		}
		for k, v := range out {
			if v == 0 {
				delete(out, k)
			}
		}
		return out
	}
	capt := cny(delivery.KindCaptured, "trade_1", 10000)
	capt.Discount = 2000
	inOrder, outOfOrder := &stream{t: t}, &stream{t: t}
	for _, s := range []*stream{inOrder, outOfOrder} {
		s.deliver(alipayDelivery("n_pay", capt))
	}
	inOrder.deliver(at("n_r1", "biz_1", 9000, 1000, t1))
	inOrder.deliver(at("n_r2", "biz_2", 10000, 2000, t2))
	outOfOrder.deliver(at("n_r2", "biz_2", 10000, 2000, t2))
	outOfOrder.deliver(at("n_r1", "biz_1", 9000, 1000, t1))
	want := byTime(inOrder.history)
	assert.Equal(t, map[string]int64{"revenue:refunds@1h0m0s": 9000, "revenue:refunds@2h0m0s": 1000,
		"expenses:discounts:alipay@0s": 2000, "expenses:discounts:alipay@1h0m0s": -1000, "expenses:discounts:alipay@2h0m0s": -1000}, want)
	assert.Equal(t, want, byTime(outOfOrder.history))
	assert.Equal(t, balances(inOrder.history), balances(outOfOrder.history))
}
