package main_test

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Adyen batches paid out whole are balance assertions (issue 35;
// docs/reference.md, "Provider balances"): a batch whose lines, its
// MerchantPayout included, add up to zero states that it holds nothing
// after its payout; the ledger's view of the batch is what it booked for
// the facts the batch's lines settle, so a capture still settling (in no
// batch yet) never counts.

func TestAdyenSampleBatchesAreAgreedAssertions(t *testing.T) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) {
			s := propStack(t, kind)
			raw, err := os.ReadFile(filepath.Join("..", "..", "adapters", "providers", "adyen", "testdata", "settlement", "settlement_detail_report_batch_41.csv"))
			require.NoError(t, err)
			s.send("adyen", propDelivery{name: "batch 41", body: raw})
			s.projectedToHead()
			got := s.statedBalances("adyen", "")
			accts := []string{}
			for _, b := range got {
				accts = append(accts, b.Account+" "+b.Currency)
				assert.Equal(t, "agreed", b.Status, "%+v", b)
				assert.Zero(t, b.Stated, "%+v", b)
			}
			sort.Strings(accts)
			assert.Equal(t, []string{"provider:adyen:batch:OnceLedgerECOM/41/EUR EUR", "provider:adyen:batch:OnceLedgerECOM/41/GBP GBP"}, accts)
			assert.Empty(t, s.openItems("balance_mismatch"))
			assert.Empty(t, s.openItems("payout_mismatch"))
		})
	}
}

// adyenBatchCase is one batch: a payment with its webhooks, a fee line, the
// payout; and a capture a webhook recorded that the batch does not hold
// (still settling). feeOff changes the fee line's amount in the report,
// the payout as Adyen paid it.
func adyenBatchCase(feeOff int64) (hooks []propDelivery, report propDelivery, day time.Time) {
	g := newAdyenGen(rand.New(rand.NewPCG(35, 41)), "batch")
	g.payment(adyenPayment{cur: "EUR", amount: 10000, fee: 260, refund: 2500})
	g.hook("CAPTURE", g.psp(), g.psp(), "EUR", 5000) // settling: in no batch yet
	g.fee("EUR", 12)
	feeRow := len(g.rows) - 1
	g.payouts(func() int64 { return 0 })
	if feeOff != 0 {
		g.rows[feeRow]["Net Debit (NC)"] = minorText(12+feeOff, 2)
		delete(g.rows[feeRow], "Net Credit (NC)")
	}
	return g.hooks, propDelivery{name: "batch report", body: writeAdyenReport(g.rows)}, g.at
}

func TestAdyenBatchIgnoresCapturesStillSettling(t *testing.T) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) {
			s := propStack(t, kind)
			hooks, report, _ := adyenBatchCase(0)
			for _, h := range hooks {
				s.send("adyen", h)
			}
			s.send("adyen", report)
			s.projectedToHead()
			got := s.statedBalances("adyen", "")
			require.Len(t, got, 1, "one batch, one currency")
			assert.Equal(t, "agreed", got[0].Status, "%+v", got[0])
			assert.Zero(t, got[0].Ledger, "the settling capture is in no batch")
			assert.Empty(t, s.allOpenItems(), "a batch paid out whole with a capture still settling opens nothing")
			// What a naive assertion on the whole balance would have seen.
			bal := s.readBalances()
			assert.Equal(t, int64(5000), bal["provider:adyen:balance|EUR"], "the ledger's balance holds the settling capture: %v", bal)
		})
	}
}

func TestAdyenBatchFeeChangedOpensOneItemOnItsDay(t *testing.T) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) {
			s := propStack(t, kind)
			hooks, report, day := adyenBatchCase(1) // one cent more than Adyen deducted
			for _, h := range hooks {
				s.send("adyen", h)
			}
			s.send("adyen", report)
			s.projectedToHead()
			require.Eventually(t, func() bool { return s.projectedNow() }, 30*time.Second, 50*time.Millisecond)
			assert.Equal(t, []string{"payout_mismatch"}, s.allOpenItems(), "exactly one item: the payout against its lines")
			assert.Empty(t, s.statedBalances("adyen", ""), "a batch whose lines do not add up after its payout is not paid out whole: no assertion")
			d := day.UTC().Format(time.DateOnly)
			ans := s.v1(http.MethodGet, "/v1/provider-days?provider=adyen&from="+d+"&to="+d, nil)
			require.Equal(t, http.StatusOK, ans.Status, ans.Body)
			var out struct {
				Days []listedDay `json:"days"`
			}
			require.NoError(t, json.Unmarshal([]byte(ans.Body), &out))
			require.Len(t, out.Days, 1)
			assert.Equal(t, "unbalanced", out.Days[0].Status, "%+v", out.Days[0])
			assert.Equal(t, map[string]int64{"payout_mismatch": 1}, out.Days[0].OpenItems, "%+v", out.Days[0])
		})
	}
}

// A line the ledger books nowhere (ManualCorrected: "manual booking or
// adjustment by Adyen", which names no account) leaves the ledger's view
// of its batch apart from the batch: its assertion differs by the line,
// one balance_mismatch for the batch, found on the batch's day.
func TestAdyenBatchWithAnUnbookedLineDiffers(t *testing.T) {
	s := propStack(t, onPostgres)
	g := newAdyenGen(rand.New(rand.NewPCG(35, 42)), "manual")
	g.payment(adyenPayment{cur: "EUR", amount: 10000, fee: 260})
	g.line("ManualCorrected", "", "", "", 0, "", "EUR", -300, 0)
	g.payouts(func() int64 { return 0 })
	for _, h := range g.hooks {
		s.send("adyen", h)
	}
	s.send("adyen", propDelivery{name: "batch report", body: writeAdyenReport(g.rows)})
	s.projectedToHead()
	require.Eventually(t, func() bool { return s.projectedNow() }, 30*time.Second, 50*time.Millisecond)
	got := s.statedBalances("adyen", "")
	require.Len(t, got, 1)
	assert.Equal(t, "differs", got[0].Status, "%+v", got[0])
	assert.Equal(t, int64(300), got[0].Difference, "the ledger holds what Adyen took back by the manual correction")
	assert.Equal(t, []string{"balance_mismatch"}, s.allOpenItems())
	assert.Equal(t, []string{"provider:adyen:batch:" + g.payoutID("EUR") + "/EUR"}, s.openItems("balance_mismatch"))
}
