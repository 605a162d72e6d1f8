package settlement

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func valid() Line {
	return Line{Provider: "stripe", Kind: KindCharge, LineID: "txn_1", PaymentKey: "pi_1", CaptureID: "ch_1",
		Gross: 2000, Fee: 88, Net: 1912, Currency: "USD", OriginalAmount: 2000, OriginalCurrency: "USD",
		OccurredAt: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
}

func TestValidate(t *testing.T) {
	require.NoError(t, valid().Validate())
	for _, c := range []struct {
		name   string
		change func(*Line)
		want   error
	}{
		{"net is not gross minus fee", func(l *Line) { l.Net = 1900 }, ErrInvalidAmount},
		{"amount beyond 10^15", func(l *Line) { l.Gross, l.Net, l.OriginalAmount = MaxAmount+1, MaxAmount+1-88, MaxAmount+1 }, ErrInvalidAmount},
		{"gross minus fee overflows", func(l *Line) {
			l.Gross, l.Fee, l.Net, l.OriginalAmount = math.MaxInt64, -1, math.MinInt64, math.MaxInt64
		}, ErrInvalidAmount},
		{"original of the other sign", func(l *Line) { l.OriginalAmount, l.OriginalCurrency = -1000, "EUR" }, ErrInvalidAmount},
		{"original differs in the same currency", func(l *Line) { l.OriginalAmount = 1999 }, ErrInvalidAmount},
		{"lower-case currency", func(l *Line) { l.Currency = "usd" }, ErrInvalidLine},
		{"unknown currency", func(l *Line) { l.OriginalCurrency = "XXX" }, ErrInvalidLine},
		{"unknown kind", func(l *Line) { l.Kind = "chargeback" }, ErrInvalidLine},
		{"charge without capture", func(l *Line) { l.CaptureID = "" }, ErrInvalidLine},
		{"refund without refund id", func(l *Line) { l.Kind = KindRefund }, ErrInvalidLine},
		{"payout without payout id", func(l *Line) { l.Kind = KindPayout }, ErrInvalidLine},
		{"payment line without payment", func(l *Line) { l.PaymentKey = "" }, ErrInvalidLine},
		{"no id", func(l *Line) { l.LineID = "" }, ErrInvalidLine},
		{"control character", func(l *Line) { l.CaptureID = "ch_\x00" }, ErrInvalidLine},
		{"id too long", func(l *Line) { l.PayoutID = strings.Repeat("p", MaxIDBytes+1) }, ErrInvalidLine},
		{"float rate", func(l *Line) { l.ExchangeRate = "1.2e3" }, ErrInvalidLine},
		{"no date", func(l *Line) { l.OccurredAt = time.Time{} }, ErrInvalidLine},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := valid()
			c.change(&l)
			err := l.Validate()
			assert.True(t, errors.Is(err, c.want), "%v", err)
		})
	}
}

func TestDedupKeyAndFactsHash(t *testing.T) {
	l := valid()
	assert.Equal(t, "settle:txn_1", l.DedupKey())
	l.Key = "M|41|Settled|P|C|EUR"
	assert.Equal(t, "settle:M|41|Settled|P|C|EUR", l.DedupKey(), "Key, when set, identifies the line")
	l.Key = strings.Repeat("k", MaxIDBytes)
	assert.LessOrEqual(t, len(l.DedupKey()), MaxIDBytes)
	assert.True(t, strings.HasPrefix(l.DedupKey(), "settle:sha256:"))

	a, b := valid(), valid()
	b.AvailableOn, b.PayoutID, b.ExchangeRate = time.Now(), "po_1", "1"
	assert.Equal(t, a.FactsHash(), b.FactsHash(), "descriptive fields do not change the facts")
	b.Fee, b.Net = 87, 1913
	assert.NotEqual(t, a.FactsHash(), b.FactsHash())
}

func TestCheckedArithmetic(t *testing.T) {
	_, err := SubChecked(math.MinInt64, 1)
	assert.Error(t, err)
	_, err = AddChecked(math.MaxInt64, 1)
	assert.Error(t, err)
	v, err := SubChecked(-5, math.MaxInt64)
	assert.Error(t, err, "%d", v)
	v, err = AddChecked(-5, 7)
	require.NoError(t, err)
	assert.Equal(t, int64(2), v)
}

func TestIsDecimal(t *testing.T) {
	for _, s := range []string{"1", "0.593846153846154", "12.5"} {
		assert.True(t, IsDecimal(s), s)
	}
	for _, s := range []string{"", ".5", "5.", "-1", "1e3", "1,5", "1.2.3", " 1"} {
		assert.False(t, IsDecimal(s), s)
	}
}

func TestBusinessID(t *testing.T) {
	l := valid()
	assert.Equal(t, "ch_1", l.BusinessID())
	l.Kind, l.RefundID = KindRefund, "re_1"
	assert.Equal(t, "re_1", l.BusinessID())
	l.Kind, l.DisputeID = KindDisputeReversal, "du_1"
	assert.Equal(t, "du_1", l.BusinessID())
	l.Kind, l.PayoutID = KindPayout, "po_1"
	assert.Equal(t, "po_1", l.BusinessID())
	l.Kind = KindFee
	assert.Empty(t, l.BusinessID())
}
