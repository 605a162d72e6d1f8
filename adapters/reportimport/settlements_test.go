package reportimport

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/providers/adyen"
	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/settlement"
)

// recorder is an Ingester that keeps what it was given: the first arrival
// of a dedup key is accepted, a later one a duplicate.
type recorder struct {
	mu   sync.Mutex
	seen map[string]string // dedup key → facts hash
	evs  []delivery.Event
}

func (r *recorder) Ingest(_ context.Context, ev delivery.Event) (ingest.Result, error) {
	if err := ev.Validate(); err != nil {
		return ingest.Result{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[string]string{}
	}
	r.evs = append(r.evs, ev)
	if h, ok := r.seen[ev.DedupKey]; ok {
		return ingest.Result{Outcome: ingest.Duplicate, Conflict: h != ev.FactsHash()}, nil
	}
	r.seen[ev.DedupKey] = ev.FactsHash()
	return ingest.Result{Outcome: ingest.Accepted, Appended: 1}, nil
}

func report2500(bad int) string {
	var b strings.Builder
	b.WriteString("automatic_payout_id,balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category,source_id,payment_intent_id\n")
	for i := range 2500 {
		gross := "10.00"
		if i == bad {
			gross = "10.0.0"
		}
		fmt.Fprintf(&b, "po_%d,txn_%d,2026-11-29 10:00:00,usd,%s,0.59,9.41,charge,ch_%d,pi_%d\n", i%2, i, gross, i, i)
	}
	return b.String()
}

func source(s string) Source {
	return func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(s)), nil }
}

func TestImportRecordsEveryLineAndTellsEachPayoutItsLines(t *testing.T) {
	r := &recorder{}
	im := &Importer{Ingest: r, Parsers: map[string]report.Parser{stripe.Name: stripe.ParseSettlement}}
	sum, err := im.Import(context.Background(), "stripe", source(report2500(-1)), report.Options{})
	require.NoError(t, err)
	assert.Equal(t, Summary{Lines: 2500, New: 2500, Appended: 2500}, sum)
	counted := map[string]int{}
	for _, ev := range r.evs {
		if f := ev.Facts[0]; f.Kind == delivery.KindPayoutLines {
			assert.LessOrEqual(t, len(f.Counted), settlement.MaxCountedPerDelivery)
			counted[f.BusinessID] += len(f.Counted)
		}
	}
	assert.Equal(t, map[string]int{"po_0": 1250, "po_1": 1250}, counted)

	again, err := im.Import(context.Background(), "stripe", source(report2500(-1)), report.Options{})
	require.NoError(t, err)
	assert.Equal(t, Summary{Lines: 2500, Duplicates: 2500}, again)
}

func TestMalformedReportImportsNothing(t *testing.T) {
	r := &recorder{}
	im := &Importer{Ingest: r, Parsers: map[string]report.Parser{stripe.Name: stripe.ParseSettlement}}
	_, err := im.Import(context.Background(), "stripe", source(report2500(2000)), report.Options{})
	var pe *report.ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 2002, pe.Line)
	assert.Equal(t, "gross", pe.Column)
	assert.Empty(t, r.evs, "nothing imported")

	_, err = im.Import(context.Background(), "circle", source(""), report.Options{})
	assert.ErrorIs(t, err, ErrUnknownProvider)
}

// A line seen before with other facts is a conflict, not a duplicate: the
// answer tells them apart.
func TestChangedLinesAreConflicts(t *testing.T) {
	r := &recorder{}
	im := &Importer{Ingest: r, Parsers: map[string]report.Parser{stripe.Name: stripe.ParseSettlement}}
	_, err := im.Import(context.Background(), "stripe", source(report2500(-1)), report.Options{})
	require.NoError(t, err)
	changed := strings.Replace(report2500(-1), ",txn_7,2026-11-29 10:00:00,usd,10.00,0.59,9.41,",
		",txn_7,2026-11-29 10:00:00,usd,11.00,0.59,10.41,", 1)
	require.NotEqual(t, report2500(-1), changed)
	again, err := im.Import(context.Background(), "stripe", source(changed), report.Options{})
	require.NoError(t, err)
	assert.Equal(t, Summary{Lines: 2500, Duplicates: 2499, Conflicts: 1}, again)
}

// Keys that change keep old data right: a batch imported under the keys of
// version 1 (merchant|batch|type|psp|modification|currency; lines without
// references shared one, the later ones became conflicts) and again now
// changes nothing that was recorded: each version-1 key still names the
// line it named, and only the lines version 1 lost are new.
func TestAdyenBatchImportedUnderOldKeysThenNew(t *testing.T) {
	file, err := os.ReadFile("../providers/adyen/testdata/settlement/unreferenced_batch_41.csv")
	require.NoError(t, err)
	r := &recorder{}
	old := 0
	require.NoError(t, adyen.ParseSettlement(bytes.NewReader(file), report.Options{}, func(rec report.Record) error {
		ev := delivery.Settled(rec.Line, rec.Raw)
		ev.DedupKey, _, _ = strings.Cut(ev.DedupKey, "|v2|") // the key as version 1 derived it
		res, err := r.Ingest(context.Background(), ev)
		if res.Outcome == ingest.Accepted {
			old++
		}
		return err
	}))
	require.Equal(t, 4, old, "version 1 recorded one line per shared key")

	im := &Importer{Ingest: r, Parsers: map[string]report.Parser{adyen.Name: adyen.ParseSettlement}}
	sum, err := im.Import(context.Background(), adyen.Name, source(string(file)), report.Options{})
	require.NoError(t, err)
	assert.Equal(t, Summary{Lines: 7, New: 3, Duplicates: 4, Appended: 3}, sum,
		"the recorded lines are duplicates with the same facts; the lost ones are new")

	again, err := im.Import(context.Background(), adyen.Name, source(string(file)), report.Options{})
	require.NoError(t, err)
	assert.Equal(t, Summary{Lines: 7, Duplicates: 7}, again)
}
