package stripe

import (
	"testing"

	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
)

// FuzzParseSettlement: whatever the bytes, the importer never panics, fails
// only with a *report.ParseError on a line of the file, and hands on only
// lines that make valid deliveries (providertest.FuzzSettlement).
func FuzzParseSettlement(f *testing.F) {
	providertest.FuzzSettlement(f, ParseSettlement, "testdata/settlement/payout_reconciliation.itemized.5.csv", "testdata/settlement/balance_transactions.json")
}
