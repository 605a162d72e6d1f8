package report

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/onceledger/onceledger/domain/settlement"
)

func TestBalanceGap(t *testing.T) {
	var b Balance
	line := func(id string) settlement.Line {
		return settlement.Line{Provider: "alipay", LineID: id, Currency: "CNY"}
	}
	_, ok := b.Gap(line("1"), 500, 1500)
	assert.False(t, ok, "the first line sets the balance")
	_, ok = b.Gap(line("2"), -60, 1440)
	assert.False(t, ok)
	g, ok := b.Gap(line("3"), 100, 1530)
	assert.True(t, ok)
	assert.Equal(t, settlement.Line{Provider: "alipay", LineID: "3", Currency: "CNY", Kind: settlement.KindAdjustment,
		SourceType: settlement.SourceBalanceGap, Key: "balance-gap:3", Gross: -10, Net: -10, OriginalAmount: -10, NoWebhook: true}, g)
	_, ok = b.Gap(line("4"), -30, 1500)
	assert.False(t, ok, "the next line follows from the printed balance, not the expected one")
}
