package adyen

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
)

// batchOf returns a signed batch of standard notification items, shaped as
// Adyen documents NotificationRequestItem.
func batchOf(t *testing.T, items ...map[string]any) []byte {
	t.Helper()
	var list []any
	for _, it := range items {
		list = append(list, map[string]any{"NotificationRequestItem": it})
	}
	body, err := json.Marshal(map[string]any{"live": "false", "notificationItems": list})
	require.NoError(t, err)
	signed, err := SignBatch(testKey, body)
	require.NoError(t, err)
	return signed
}

func notification(code, psp, orig, cur string, value int64) map[string]any {
	it := map[string]any{
		"amount":              map[string]any{"currency": cur, "value": value},
		"eventCode":           code,
		"eventDate":           "2026-12-01T08:00:00+01:00",
		"merchantAccountCode": "OnceLedgerECOM",
		"merchantReference":   "order-1001",
		"pspReference":        psp,
		"success":             "true",
	}
	if orig != "" {
		it["originalReference"] = orig
	}
	return it
}

// REQUEST_FOR_INFORMATION, like NOTIFICATION_OF_CHARGEBACK, is a dispute
// stage in which Adyen debits nothing: an inquiry.
func TestRequestForInformationIsAnInquiry(t *testing.T) {
	evs, err := parse(mustNew(t, testKey), batchOf(t,
		notification("REQUEST_FOR_INFORMATION", "DZ4DPSHB4WD2WN82", "QFQTPCQ8HXSKGK82", "EUR", 1000)))
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, []delivery.Fact{{Kind: delivery.KindDisputeInquiry, BusinessID: "DZ4DPSHB4WD2WN82", Amount: 1000, Currency: "EUR"}}, evs[0].Facts)
}

// Adyen's documented dispute flow, through the domain: the notification of
// chargeback posts nothing, CHARGEBACK debits, CHARGEBACK_REVERSED credits it
// back, SECOND_CHARGEBACK debits for good.
func TestAdyenDisputeFlowPostsWhenFundsMove(t *testing.T) {
	a := mustNew(t, testKey)
	var history []payment.Event
	balances := func() map[string]int64 { return providertest.Balances(history) }
	for _, f := range []string{"lifecycle.json", "disputes.json"} {
		evs, err := parse(a, providertest.Fixture(t, f))
		require.NoError(t, err)
		for _, ev := range evs {
			out, err := payment.Decide(history, ev)
			require.NoError(t, err, ev.DedupKey)
			history = append(history, out...)
			switch ev.Type {
			case "NOTIFICATION_OF_CHARGEBACK":
				assert.NotContains(t, balances(), ledger.DisputeReceivable("adyen"), "nothing debited yet")
			case "CHARGEBACK":
				assert.Equal(t, int64(1000), balances()[ledger.DisputeReceivable("adyen")])
			case "CHARGEBACK_REVERSED":
				assert.NotContains(t, balances(), ledger.DisputeReceivable("adyen"))
			}
		}
	}
	// Capture 1000, refund 250, dispute lost 1000: the balance is short by
	// the refund and the chargeback, and over_reversal is open.
	assert.Equal(t, map[string]int64{
		ledger.ProviderBalance("adyen"): -250, ledger.RevenueSales: -1000, ledger.RevenueRefunds: 250, ledger.ExpensesDispute: 1000,
	}, balances())
}

// Adyen's currency table departs from ISO 4217 for CLP (2 decimals, ISO 0),
// CVE and IDR (0 decimals, ISO 2) and ISK (2 decimals, ISO 0): amount.value is
// converted into ISO minor units.
func TestAdyenCurrencyExponents(t *testing.T) {
	a := mustNew(t, testKey)
	for _, tc := range []struct {
		cur   string
		value int64
		want  int64
	}{{"CLP", 150000, 1500}, {"CVE", 125, 12500}, {"ISK", 50000, 500}, {"IDR", 15000, 1500000}, {"EUR", 1000, 1000}, {"JPY", 1000, 1000}} {
		evs, err := parse(a, batchOf(t, notification("CAPTURE", "LWX3JCWDNRRBNZ65", "QFQTPCQ8HXSKGK82", tc.cur, tc.value)))
		require.NoError(t, err, tc.cur)
		assert.Equal(t, tc.want, evs[0].Facts[0].Amount, tc.cur)
		assert.Equal(t, money.Currency(tc.cur), evs[0].Facts[0].Currency)
	}
	// 1.50 pesos has no ISO representation.
	_, err := parse(a, batchOf(t, notification("CAPTURE", "LWX3JCWDNRRBNZ65", "QFQTPCQ8HXSKGK82", "CLP", 150050)))
	assert.ErrorIs(t, err, delivery.ErrInvalidAmount)
	// Above 10^15 minor units: 400.
	_, err = parse(a, batchOf(t, notification("CAPTURE", "LWX3JCWDNRRBNZ65", "QFQTPCQ8HXSKGK82", "EUR", delivery.MaxAmount+1)))
	assert.ErrorIs(t, err, delivery.ErrInvalidAmount)
}
