package projections_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/domain/settlement"
	"github.com/onceledger/onceledger/projections/views"
)

// A provider's day is awaiting_report until a file covers it, balanced
// when every balance stated as of it agrees (its content hash recomputed
// from the journal), unbalanced naming the differing balances otherwise.
func TestProviderDays(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	stop := f.run(ctx)
	defer func() { require.NoError(t, stop()) }()
	d1 := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	d2, d3 := d1.AddDate(0, 0, 1), d1.AddDate(0, 0, 2)
	stream := assertion.StreamID(ledger.ProviderBalance("stripe"), "USD")
	file := func(at time.Time, key string, amount int64) assertion.Stated {
		s := stated(at, key, amount)
		s.Source = "stripe balance summary"
		return s
	}
	f.capture(ctx, "pd_1", d1, 1000, 30)
	f.capture(ctx, "pd_2", d1.Add(time.Hour), 500, 0)
	f.capture(ctx, "pd_3", d2, 100, 0)
	f.capture(ctx, "pd_4", d3, 100, 0)
	f.appendAssertion(ctx, stream, file(d1.Add(5*time.Hour), "d1", 1470), file(d3.Add(time.Hour), "d3", 1500))
	f.waitCaughtUp(ctx)

	days, err := f.db.ProviderDays(ctx, views.ProviderDayFilter{Provider: "stripe", From: "2026-11-02", To: "2026-11-04"})
	require.NoError(t, err)
	require.Len(t, days, 3)
	assert.Equal(t, views.DayBalanced, days[0].Status, "%+v", days[0])
	assert.Equal(t, int64(2), days[0].Events)
	assert.Equal(t, views.DayAwaitingReport, days[1].Status)
	assert.Equal(t, views.DayUnbalanced, days[2].Status)
	assert.Equal(t, []string{"1 stated balances differ from the ledger"}, days[2].Why)

	// The hash, recomputed from the journal as docs/reference.md says:
	// each event's facts hash over its rows, then the chain.
	rows, err := f.db.Journal(ctx, views.JournalFilter{From: d1.Truncate(24 * time.Hour), To: d2.Truncate(24 * time.Hour)})
	require.NoError(t, err)
	var order []uuid.UUID
	facts := map[uuid.UUID][]byte{}
	for _, r := range rows {
		if r.Provider != "stripe" {
			continue
		}
		if _, ok := facts[r.EventID]; !ok {
			order = append(order, r.EventID)
		}
		facts[r.EventID] = append(facts[r.EventID], fmt.Sprintf("%s\n%s\n%d\n", r.Account, r.Currency, r.Debit-r.Credit)...)
	}
	h := make([]byte, sha256.Size)
	for _, id := range order {
		fh := sha256.Sum256(facts[id])
		sum := sha256.Sum256(append(append(append([]byte{}, h...), id[:]...), fh[:]...))
		h = sum[:]
	}
	assert.Equal(t, hex.EncodeToString(h), days[0].Hash())
}

// A day counts the captures and refunds its webhooks recorded that no
// report line has settled yet; a line arriving a day later takes its fact
// off the fact's day, and a line arriving before its webhook keeps the
// webhook's fact from counting at all.
func TestProviderDaysAwaitingReport(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	stop := f.run(ctx)
	defer func() { require.NoError(t, stop()) }()
	d1 := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	d2 := d1.AddDate(0, 0, 1)
	line := func(id string, at time.Time) payment.LineSettled {
		return payment.LineSettled{
			Meta: payment.Meta{Provider: "stripe", PaymentKey: id, DedupKey: "settle:txn_" + id, OccurredAt: at},
			Line: settlement.Line{Provider: "stripe", Kind: settlement.KindCharge, LineID: "txn_" + id, PaymentKey: id,
				CaptureID: "ch_" + id, Gross: 1000, Net: 1000, Currency: "USD", OccurredAt: at}}
	}
	f.capture(ctx, "aw_1", d1, 1000, 0)
	f.capture(ctx, "aw_2", d1.Add(time.Hour), 1000, 0)
	// aw_3's line comes first: its webhook then awaits nothing.
	f.appendEvents(ctx, delivery.PaymentStream("stripe", "aw_3"), line("aw_3", d1))
	f.capture(ctx, "aw_3", d1.Add(2*time.Hour), 1000, 0)
	f.waitCaughtUp(ctx)
	days, err := f.db.ProviderDays(ctx, views.ProviderDayFilter{Provider: "stripe", From: "2026-11-02", To: "2026-11-03"})
	require.NoError(t, err)
	require.Len(t, days, 2)
	assert.Equal(t, int64(2), days[0].AwaitingReportFacts, "aw_1 and aw_2 await a report")

	// aw_1's line, dated the next day, settles it on its own day.
	f.appendEvents(ctx, delivery.PaymentStream("stripe", "aw_1"), line("aw_1", d2))
	f.waitCaughtUp(ctx)
	days, err = f.db.ProviderDays(ctx, views.ProviderDayFilter{Provider: "stripe", From: "2026-11-02", To: "2026-11-03"})
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 0}, []int64{days[0].AwaitingReportFacts, days[1].AwaitingReportFacts})
}
