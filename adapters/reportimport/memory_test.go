package reportimport

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
	"github.com/onceledger/onceledger/domain/delivery"
)

// smallPayouts is a Stripe itemized report of n charge lines, perPayout to
// a payout, made as it is read (never held: the test measures the import,
// not its input).
type smallPayouts struct {
	n, perPayout, i int
	buf             []byte
	off             int
}

func (g *smallPayouts) Read(p []byte) (int, error) {
	if g.off == len(g.buf) {
		if g.i > g.n {
			return 0, io.EOF
		}
		g.buf, g.off = g.buf[:0], 0
		if g.i == 0 {
			g.buf = append(g.buf, "automatic_payout_id,balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category,source_id,payment_intent_id\n"...)
		}
		for k := 0; k < 64 && g.i < g.n; k++ {
			id := strconv.Itoa(g.i)
			g.buf = append(g.buf, "po_"...)
			g.buf = strconv.AppendInt(g.buf, int64(g.i/g.perPayout), 10)
			g.buf = append(g.buf, ",txn_3QxYzA2eZvKYlo2C"+id+",2026-11-29 10:00:00,usd,10.00,0.59,9.41,charge,ch_3QxYzA2eZvKYlo2C"+id+",pi_3QxYzA2eZvKYlo2C"+id+"\n"...)
			g.i++
		}
		if g.i == g.n {
			g.i++ // the last chunk is out; EOF next
		}
	}
	n := copy(p, g.buf[g.off:])
	g.off += n
	return n, nil
}

// discarder is an Ingester that keeps nothing of the line deliveries (so
// that the heap measured is the importer's), only the payout-lines
// deliveries' keys and sizes when told to keep them.
type discarder struct {
	mu      sync.Mutex
	lines   atomic.Int64
	told    atomic.Int64   // lines the payout-lines deliveries counted
	keep    bool           // keep payouts and counted
	payouts map[string]int // payout-lines dedup key → lines counted
	counted map[string]int // payout → lines counted
}

func (d *discarder) Ingest(_ context.Context, ev delivery.Event) (ingest.Result, error) {
	if f := ev.Facts[0]; f.Kind == delivery.KindPayoutLines {
		d.told.Add(int64(len(f.Counted)))
		if !d.keep {
			return ingest.Result{Outcome: ingest.Accepted, Appended: 1}, nil
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.payouts == nil {
			d.payouts, d.counted = map[string]int{}, map[string]int{}
		}
		d.payouts[ev.DedupKey] = len(f.Counted)
		d.counted[f.BusinessID] += len(f.Counted)
		return ingest.Result{Outcome: ingest.Accepted, Appended: 1}, nil
	}
	d.lines.Add(1)
	return ingest.Result{Outcome: ingest.Accepted, Appended: 1}, nil
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// Bounded uploads (issue 24 item 14): the memory an import holds does not
// grow with the file. A report of many small payouts (ten lines each, as
// Adyen batches or Square's daily payouts often are) made every payout's
// line keys wait for the end of the file: about a hundred bytes a line,
// 25 MiB at 200,000 lines, and the server's collector lets the heap grow to
// four times what is live. Measured here as the live heap after a
// collection, sampled along the import, against the one at its start: a
// size, not a time.
func TestImportMemoryDoesNotGrowWithTheFile(t *testing.T) {
	const lines, perPayout = 300_000, 10
	d := &discarder{}
	im := &Importer{Ingest: d, Parsers: map[string]report.Parser{stripe.Name: stripe.ParseSettlement}}
	var mu sync.Mutex
	var base, peak uint64
	im.Progress = func(n int) {
		if n%25_000 != 0 {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		h := liveHeap()
		if base == 0 {
			base = h
		}
		peak = max(peak, h)
	}
	sum, err := im.Record(context.Background(), stripe.Name, smallPayoutsWalk(lines, perPayout))
	require.NoError(t, err)
	require.Equal(t, lines, sum.Lines)
	require.NotZero(t, base)
	grown := int64(peak) - int64(base)
	t.Logf("live heap at 25,000 lines %d KiB, peak %d KiB: grew %d KiB over %d lines", base>>10, peak>>10, grown>>10, lines)
	// Held whole, the payouts' keys would be over 30 MiB here.
	assert.Less(t, grown, int64(8<<20), "the live heap grew with the file")
	assert.Equal(t, int64(lines), d.told.Load(), "every line counted in its payout")
}

// The payouts' batches are cut where the file's lines put them: every
// payout is told each of its lines once, in deliveries that are the same
// when the file is imported again (duplicates, not new facts).
func TestImportPayoutBatchesAreTheSameAgain(t *testing.T) {
	const lines, perPayout = 3*maxHeldCounted + 7, 10
	d := &discarder{keep: true}
	im := &Importer{Ingest: d, Parsers: map[string]report.Parser{stripe.Name: stripe.ParseSettlement}}
	_, err := im.Record(context.Background(), stripe.Name, smallPayoutsWalk(lines, perPayout))
	require.NoError(t, err)
	require.Len(t, d.counted, lines/perPayout+1)
	for po, n := range d.counted {
		if po != "po_"+strconv.Itoa(lines/perPayout) {
			require.Equal(t, perPayout, n, po)
		}
	}
	first := d.payouts
	d.payouts, d.counted = nil, nil
	_, err = im.Record(context.Background(), stripe.Name, smallPayoutsWalk(lines, perPayout))
	require.NoError(t, err)
	assert.Equal(t, first, d.payouts)
}

func smallPayoutsWalk(lines, perPayout int) func(report.Func) error {
	return func(fn report.Func) error {
		return stripe.ParseSettlement(&smallPayouts{n: lines, perPayout: perPayout}, report.Options{}, fn)
	}
}

// streamWatch is a batch Ingester that notes when two calls hold the same
// stream at once.
type streamWatch struct {
	mu       sync.Mutex
	inflight map[string]int
	overlaps int
	streams  map[string]bool // streams of the payout-lines deliveries
}

func (w *streamWatch) hold(evs []delivery.Event) func() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inflight == nil {
		w.inflight, w.streams = map[string]int{}, map[string]bool{}
	}
	held := map[string]bool{}
	for _, ev := range evs {
		if ev.Facts[0].Kind == delivery.KindPayoutLines {
			w.streams[ev.StreamID()] = true
		}
		held[ev.StreamID()] = true
	}
	for st := range held {
		if w.inflight[st] > 0 {
			w.overlaps++
		}
		w.inflight[st]++
	}
	return func() {
		time.Sleep(200 * time.Microsecond) // a unit of work takes a while
		w.mu.Lock()
		defer w.mu.Unlock()
		for st := range held {
			w.inflight[st]--
		}
	}
}

func (w *streamWatch) Ingest(_ context.Context, ev delivery.Event) (ingest.Result, error) {
	defer w.hold([]delivery.Event{ev})()
	return ingest.Result{Outcome: ingest.Accepted, Appended: 1}, nil
}

func (w *streamWatch) IngestBatch(_ context.Context, evs []delivery.Event) ([]ingest.Result, error) {
	defer w.hold(evs)()
	out := make([]ingest.Result, len(evs))
	for i := range out {
		out[i] = ingest.Result{Outcome: ingest.Accepted, Appended: 1}
	}
	return out, nil
}

// A payout's stream is written by one worker at a time, its payout-lines
// deliveries included: written beside the worker's sets (fee rows on the
// same stream), each lost race sent a whole set to be decided again line
// by line, and took the stream's kept fold with it.
func TestPayoutLinesShareTheirStreamsWorker(t *testing.T) {
	var b strings.Builder
	b.WriteString("automatic_payout_id,balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category\n")
	for i := range 5000 {
		fmt.Fprintf(&b, "po_big,txn_%d,2026-11-29 10:00:00,usd,-0.05,0.00,-0.05,fee\n", i)
	}
	w := &streamWatch{}
	im := &Importer{Ingest: w, Parsers: map[string]report.Parser{stripe.Name: stripe.ParseSettlement}}
	sum, err := im.Import(context.Background(), stripe.Name, source(b.String()), report.Options{})
	require.NoError(t, err)
	assert.Equal(t, Summary{Lines: 5000, New: 5000, Appended: 5000}, sum, "payout-lines deliveries are no lines")
	require.Len(t, w.streams, 1, "one payout")
	assert.Zero(t, w.overlaps, "two writers held a stream at once")
}
