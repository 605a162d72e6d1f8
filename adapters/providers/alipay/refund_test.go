package alipay

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"

	"github.com/onceledger/onceledger/domain/payment"
)

func TestRefundIncrease(t *testing.T) {
	assert.Equal(t, int64(1000), payment.RefundIncrease(0, 1000))
	assert.Equal(t, int64(500), payment.RefundIncrease(1000, 1500))
	assert.Zero(t, payment.RefundIncrease(1500, 1000), "an older total arriving late")
	assert.Zero(t, payment.RefundIncrease(1500, 1500), "a duplicate")
	assert.Zero(t, payment.RefundIncrease(0, 0))
}

// A trade refunded in several parts notifies each refund with the total
// refunded so far. Whatever order the notifications arrive in, however
// often each is repeated, posting RefundIncrease of each keeps the posted
// total equal to the highest total seen so far, so it never exceeds what
// Alipay refunded and ends equal to it once the last refund's notification
// (or any later one) has arrived.
func TestRefundIncreaseProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(rapid.Int64Range(1, 1_000_000), 1, 8).Draw(t, "refunds")
		var totals []int64 // the cumulative refund_fee of each refund's notification
		var sum int64
		for _, p := range parts {
			sum += p
			totals = append(totals, sum)
		}
		// Deliveries: every notification at least once (Alipay retries
		// until answered), some several times, in any order.
		var deliveries []int64
		for _, tot := range totals {
			n := rapid.IntRange(1, 3).Draw(t, "copies")
			for range n {
				deliveries = append(deliveries, tot)
			}
		}
		order := rapid.Permutation(deliveries).Draw(t, "order")

		var posted, seen int64
		for _, reported := range order {
			inc := payment.RefundIncrease(posted, reported)
			if inc < 0 {
				t.Fatalf("negative increase %d", inc)
			}
			posted += inc
			seen = max(seen, reported)
			if posted != seen {
				t.Fatalf("posted %d after seeing at most %d", posted, seen)
			}
			if posted > sum {
				t.Fatalf("posted %d, above the %d refunded", posted, sum)
			}
		}
		if posted != sum {
			t.Fatalf("posted %d, want the highest total %d", posted, sum)
		}
	})
}
