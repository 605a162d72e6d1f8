package payment

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A refund that arrived before its capture posts, once the capture
// arrives, at its own moment, not the capture's: the provider's balance as
// of any moment between the two is what its own bill states (issue 35: a
// WeChat Pay fund-flow bill's 账户结余 disagreed with the ledger between a
// capture and a refund whose notification came first).
func TestPendingRefundPostsAtItsOwnMoment(t *testing.T) {
	s := &stream{t: t}
	ref := deliveryOf("evt_refund", refundFact("re_1", 400))
	ref.OccurredAt = t0.Add(time.Minute)
	s.deliver(ref)
	out := s.deliver(deliveryOf("evt_capture", capture("ch_1", 1000, 0)))
	var posted *RefundPosted
	for _, e := range out {
		if r, ok := e.(RefundPosted); ok {
			posted = &r
		}
	}
	require.NotNil(t, posted)
	assert.True(t, posted.WasPending)
	assert.Equal(t, t0.Add(time.Minute), posted.OccurredAt, "the refund's own moment")
}
