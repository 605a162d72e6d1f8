package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
	"github.com/onceledger/onceledger/domain/settlement"
)

// The Stripe sample reports of docs/settlement.md's walk-through tell one
// story: one payout, its charges, refund and fee in the same weeks, the
// payout after every line it pays out, in both files. A file dated a
// year off would open a period of its own and a payout before its charges.
func TestSampleStripeReportsAreDatedConsistently(t *testing.T) {
	var lines []settlement.Line
	for _, name := range []string{"stripe_payout_reconciliation.itemized.csv", "stripe_balance_transactions.json"} {
		f, err := os.Open(filepath.Join(repoRoot, "docs", "samples", name))
		require.NoError(t, err)
		err = stripe.ParseSettlement(f, report.Options{PayoutID: "po_1QzPoU2eZvKYlo2CxPaYoUt1"}, func(r report.Record) error {
			lines = append(lines, r.Line)
			return nil
		})
		require.NoError(t, f.Close())
		require.NoError(t, err, name)
	}
	var payouts, others []settlement.Line
	for _, l := range lines {
		if l.Kind == settlement.KindPayout {
			payouts = append(payouts, l)
		} else {
			others = append(others, l)
		}
	}
	require.NotEmpty(t, payouts)
	require.NotEmpty(t, others)
	for _, p := range payouts {
		for _, l := range others {
			assert.False(t, p.OccurredAt.Before(l.OccurredAt), "payout %s (%s) before line %s (%s)", p.PayoutID, p.OccurredAt, l.BusinessID(), l.OccurredAt)
			assert.Less(t, p.OccurredAt.Sub(l.OccurredAt).Hours(), 14*24.0, "payout %s (%s) and line %s (%s) are weeks apart", p.PayoutID, p.OccurredAt, l.BusinessID(), l.OccurredAt)
		}
	}
}
