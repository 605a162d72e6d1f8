package views_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/onceledger/onceledger/projections/views"
)

func TestTrialByCurrency(t *testing.T) {
	trial := views.TrialByCurrency([]views.Balance{
		{Account: "bank:payouts", Currency: "USD", Balance: 5000},
		{Account: "provider:stripe:balance", Currency: "USD", Balance: 2000},
		{Account: "revenue:sales", Currency: "USD", Balance: -7000},
		{Account: "revenue:sales", Currency: "EUR", Balance: -10},
	})
	assert.Equal(t, []views.CurrencyTrial{{Currency: "EUR", Credits: 10}, {Currency: "USD", Debits: 7000, Credits: 7000}}, trial)
	assert.False(t, trial[0].Balanced())
	assert.True(t, trial[1].Balanced())
}

func TestByStatus(t *testing.T) {
	got := views.ByStatus([]views.InboxCount{
		{Provider: "adyen", Status: "ignored", Count: 1}, {Provider: "adyen", Status: "applied", Count: 2},
		{Provider: "stripe", Status: "applied", Count: 3},
	})
	assert.Equal(t, []views.StatusCount{{Status: "applied", Count: 5}, {Status: "ignored", Count: 1}}, got)
	assert.Empty(t, views.ByStatus(nil))
}
