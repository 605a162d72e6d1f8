package console_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/domain/period"
)

// appendFacts records payment events in a stream after its last one, as
// the settlement import does.
func (f *fixture) appendFacts(stream string, evs ...payment.Event) {
	f.t.Helper()
	ctx := context.Background()
	have, err := f.es.ReadStream(ctx, stream)
	require.NoError(f.t, err)
	var data []eventstore.EventData
	for _, e := range evs {
		typ, b, err := payment.Encode(e)
		require.NoError(f.t, err)
		data = append(data, eventstore.EventData{ID: uuid.New(), Type: typ, Data: b})
	}
	_, err = f.es.Append(ctx, stream, eventstore.ExpectFor(len(have)), data)
	require.NoError(f.t, err)
	f.waitProjected()
}

// TestConsoleSaysTrueThings: the figures that were false (issue 27).
// A fee a settlement report posted is in the payment's header (it said
// "fee 0.00"), its event is a sentence (not its type), a payout's item
// links to the payout's page (not a 404 payment page), a projection's
// position is the CLI's number (not commit/prepare), amounts are grouped
// and times carry their zone.
func TestConsoleSaysTrueThings(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	s := f.seedStory()
	m := payment.Meta{Provider: "standard", PaymentKey: s.paymentID, DedupKey: "settle:txn_fee_" + s.paymentID, OccurredAt: time.Now().UTC()}
	f.appendFacts(delivery.PaymentStream("standard", s.paymentID),
		payment.FeeSettled{Meta: m, LineID: "txn_fee_1", Fee: 66, Currency: "USD"})
	po := "po_missing_" + s.paymentID
	pm := payment.Meta{Provider: "standard", PaymentKey: po, DedupKey: "settle:" + po, OccurredAt: time.Now().UTC()}
	f.appendFacts(delivery.PayoutStream("standard", po),
		payment.PayoutPaid{Meta: pm, PayoutID: po, Amount: 123456, Currency: "JPY"},
		payment.Flagged{Meta: pm, Kind: payment.ReconMissingWebhook, Key: po, Details: "no webhook for this payout"})
	c := f.client()
	c.signIn(readToken)

	r := c.get("/console/payments/standard/" + s.paymentID)
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, r.body, `<span id="payment-fee">37.16</span>`, "36.50 from the webhook + 0.66 from settlement")
	assert.Contains(t, r.body, "Fee 0.66 USD posted from settlement report line txn_fee_1")
	assert.Contains(t, r.body, "Capture cap_1 of 1\u202f250.00 USD", "digit grouping")
	assert.Regexp(t, `\d\d:\d\d:\d\d\x{a0}UTC`, r.body, "times name their zone")
	assert.Contains(t, r.body, "Times are shown in UTC.")

	r = c.get("/console/reconciliation?status=open&kind=missing_webhook")
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, r.body, `href="/console/payouts/standard/`+po+`"`)
	assert.NotContains(t, r.body, `href="/console/payments/standard/`+po+`"`)
	assert.Equal(t, http.StatusOK, c.get("/console/payouts/standard/"+po).status)

	r = c.get("/console")
	require.Equal(t, http.StatusOK, r.status)
	att, trial := strings.Index(r.body, `id="attention"`), strings.Index(r.body, `id="h-trial"`)
	assert.True(t, att > 0 && att < trial, "the overview leads with what needs attention")
	assert.Regexp(t, `(?s)<table id="open-items">.*missing_webhook.*</table>`, r.body)
	assert.Regexp(t, `(?s)id="att-mismatch">.*payouts in`, r.body)
	assert.Contains(t, r.body, `id="att-unsettled"`)

	r = c.get("/console/projections")
	require.Equal(t, http.StatusOK, r.status)
	assert.NotRegexp(t, regexp.MustCompile(`<code>\d+/\d+</code>`), r.body, "positions as the CLI shows them")
	assert.Regexp(t, `<td class="num" title="feed position [^"]+">[\d\x{202f}]+</td>`, r.body)
}

// TestConsolePeriodsAreComplete: each period shows its totals per
// currency, links to its trial-balance and journal CSV, and its close and
// reopen history (actor, note, time).
func TestConsolePeriodsAreComplete(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.seedStory()
	ctx := context.Background()
	p := period.Of(time.Now().UTC(), time.UTC)
	var data []eventstore.EventData
	for _, e := range []period.Event{
		period.Closed{Period: p, Zone: "UTC", Actor: "carol", Note: "month end", At: time.Now().UTC()},
		period.Reopened{Period: p, Actor: "dave", Reason: "late invoice", At: time.Now().UTC()},
	} {
		typ, b, err := period.Encode(e)
		require.NoError(t, err)
		data = append(data, eventstore.EventData{ID: uuid.New(), Type: typ, Data: b})
	}
	_, err := f.es.Append(ctx, period.StreamID, eventstore.Any, data)
	require.NoError(t, err)
	f.waitProjected()
	c := f.client()
	c.signIn(readToken)

	r := c.get("/console/periods")
	require.Equal(t, http.StatusOK, r.status)
	section := regexp.MustCompile(`(?s)<section class="period" id="period-` + p.String() + `">.*?</section>`).FindString(r.body)
	require.NotEmpty(t, section, r.body)
	assert.Contains(t, section, "Totals booked into the period, per currency")
	assert.Regexp(t, `(?s)<tr data-currency="USD"><th scope="row">USD</th><td class="num">[\d\x{202f}.]+</td>`, section)
	assert.Contains(t, section, `href="/console/periods/`+p.String()+`/trial-balance.csv"`)
	assert.Contains(t, section, `href="/console/periods/`+p.String()+`/journal.csv"`)
	assert.Regexp(t, `(?s)UTC</time></td><th scope="row">closed</th><td>carol</td><td>month end</td>.*UTC</time></td><th scope="row">reopened</th><td>dave</td><td>late invoice</td>`, section)

	csvResp := c.get("/console/periods/" + p.String() + "/trial-balance.csv")
	require.Equal(t, http.StatusOK, csvResp.status)
	assert.True(t, strings.HasPrefix(csvResp.body, "period,account,currency,opening"), csvResp.body)
	csvResp = c.get("/console/periods/" + p.String() + "/journal.csv")
	require.Equal(t, http.StatusOK, csvResp.status)
	assert.True(t, strings.HasPrefix(csvResp.body, "date,account,debit,credit"), csvResp.body)
	assert.Contains(t, csvResp.body, "revenue:sales")
	assert.Equal(t, http.StatusBadRequest, c.get("/console/periods/2026-13/journal.csv").status)
}

// TestConsoleConflictSideBySide: a conflicting redelivery is shown next to
// the first delivery field by field, the differing field marked (not as
// two payload hashes), and the count does not read as more deliveries
// than arrived.
func TestConsoleConflictSideBySide(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	s := f.seedStory()
	c := f.client()
	c.signIn(readToken)
	r := c.get("/console/inbox/delivery?provider=standard&key=" + s.conflictKey)
	require.Equal(t, http.StatusOK, r.status)
	assert.Regexp(t, `<tr class="differs"><th scope="row"><code title="data.amount">data.amount</code> <strong class="bad" aria-label="differs">≠</strong></th><td><code title="125000">125000</code></td><td><code title="126000">126000</code></td></tr>`, r.body)
	assert.Regexp(t, `<tr><th scope="row"><code title="data.capture_id">data.capture_id</code></th>`, r.body, "equal fields are not marked")
	assert.Contains(t, r.body, "<dd>2, 1 with other bytes</dd>", "two deliveries, not three")
}
