// Package reportimport owns the import of settlement reports: a report file
// of a provider is validated whole, then each of its lines becomes a
// delivery (delivery.Settled: dedup key from the line's own ids) recorded
// through the same ingest service and inbox gate as the webhooks, so that
// importing the same or an overlapping file again changes nothing. After an
// import it asks the domain to open `unsettled` for the provider's captures
// that the report's period should have settled and did not. The command line
// (`onceledger settle import`, `settle sync stripe`) and the HTTP endpoint
// (`POST /v1/settlements/{provider}`) both go through Importer. Which
// providers have a report importer is the provider registry's to say
// (adapters/providers/registry): the Importer is given the parsers.
package reportimport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/settlement"
)

// ErrUnknownProvider: no importer for the provider named.
var ErrUnknownProvider = errors.New("no settlement report importer for this provider")

// Ingester records one delivery through the inbox gate (ingest.Service).
type Ingester interface {
	Ingest(ctx context.Context, ev delivery.Event) (ingest.Result, error)
}

// Candidates lists the payments of a provider that may hold captures no
// settlement line settled, captured at or before cutoff (a read-model
// query; the domain decides on the stream, so a stale answer only costs a
// delivery that adds nothing).
type Candidates interface {
	UnsettledCandidates(ctx context.Context, provider string, cutoff time.Time) ([]string, error)
}

// Linker finds the payment of a line whose report does not name it: the
// payment key the inbox holds the line under (lineKey: its dedup key), else
// the one the provider's webhooks gave its capture (a read of the inbox).
type Linker interface {
	LinkedPayment(ctx context.Context, provider, lineKey, captureID string) (paymentKey string, ok bool, err error)
}

// Importer imports report files.
type Importer struct {
	// Links, when set, links lines whose report does not name their
	// payment (report.Options.Link): a Stripe report without
	// payment_intent_id. Without it such a file is refused.
	Links  Linker
	Ingest Ingester
	// Parsers are the report parsers by provider name (registry.Reports):
	// a provider without one has no report importer (ErrUnknownProvider).
	Parsers map[string]report.Parser
	// Candidates, when set, with UnsettledAfter > 0, makes every import end
	// with the unsettled check (ONCELEDGER_UNSETTLED_AFTER).
	Candidates     Candidates
	UnsettledAfter time.Duration
	// Workers is how many lines are recorded concurrently (default 8):
	// lines of different payments do not wait for each other; lines of
	// one payment that race are retried by the ingest service.
	Workers int
	// Progress, when set, is called with the number of lines recorded so
	// far (the CLI's progress bar).
	Progress func(lines int)
	// Balances, when set, records the balances a file states as balance
	// assertions, after its lines (stated.go).
	Balances Asserter
}

// Summary is what an import did (docs/reference.md: lines read, new,
// duplicates, conflicts). Lines = New + Duplicates + Conflicts.
type Summary struct {
	Lines      int `json:"lines"`
	New        int `json:"new"`
	Duplicates int `json:"duplicates"` // seen before with the same facts
	// Conflicts are lines seen before with other facts (a changed line):
	// recorded for reconciliation as conflicting redeliveries, not facts.
	Conflicts int `json:"conflicts"`
	// Appended counts the domain events the new lines added (facts).
	Appended  int `json:"-"`
	Unsettled int `json:"-"` // unsettled checks that opened items
	Stated    int `json:"-"` // balances recorded as new assertions
}

// Source opens a report file; Import reads it twice (validate, then
// import), so that a malformed file imports nothing while memory stays
// bounded whatever its size.
type Source func() (io.ReadCloser, error)

// Validate parses the whole file and returns its line count, or the
// *report.ParseError naming the first malformed line and column. Lines are
// also checked as deliveries (delivery.Event.Validate), so nothing the
// gate would refuse gets past it.
func (im *Importer) Validate(provider string, r io.Reader, opt report.Options) (int, error) {
	parse, err := im.parser(provider)
	if err != nil {
		return 0, err
	}
	n := 0
	err = parse(r, opt, func(rec report.Record) error {
		if err := delivery.Settled(rec.Line, nil).Validate(); err != nil {
			return &report.ParseError{Line: rec.Pos, Err: err}
		}
		n++
		return nil
	})
	return n, err
}

// Imports reports whether provider has a report importer.
func (im *Importer) Imports(provider string) bool {
	_, err := im.parser(provider)
	return err == nil
}

func (im *Importer) parser(provider string) (report.Parser, error) {
	parse, ok := im.Parsers[provider]
	if !ok || parse == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownProvider, provider)
	}
	return parse, nil
}

// Import validates the source whole, then records each line. It returns
// with an error naming line and column, having recorded nothing, when the
// file is malformed; with another error (storage unavailable) some lines
// may be recorded: importing the file again completes it.
func (im *Importer) Import(ctx context.Context, provider string, src Source, opt report.Options) (Summary, error) {
	opt = im.linking(ctx, provider, opt)
	r, err := src()
	if err != nil {
		return Summary{}, err
	}
	_, err = im.Validate(provider, r, opt)
	_ = r.Close()
	if err != nil {
		return Summary{}, err
	}
	r, err = src()
	if err != nil {
		return Summary{}, err
	}
	defer r.Close()
	parse, _ := im.parser(provider) // Validate found it
	var stated *statedBalances
	if im.Balances != nil {
		stated = newStatedBalances()
		opt.Stated = stated.add
	}
	sum, err := im.Record(ctx, provider, func(fn report.Func) error { return parse(r, opt, fn) })
	if err == nil && stated != nil {
		sum.Stated, err = stated.record(ctx, im.Balances, provider)
	}
	return sum, err
}

// linking returns opt with its Link set to the importer's Linker, unless
// the caller set one.
func (im *Importer) linking(ctx context.Context, provider string, opt report.Options) report.Options {
	if opt.Link == nil && im.Links != nil {
		opt.Link = func(lineKey, captureID string) (string, bool, error) {
			return im.Links.LinkedPayment(ctx, provider, lineKey, captureID)
		}
	}
	return opt
}

// Record records the lines walk hands it (a parsed file, or lines pulled
// from a provider's API: `settle sync stripe`), each through the gate, then
// runs the unsettled check. Lines are not validated ahead: walk's source
// is read once.
func (im *Importer) Record(ctx context.Context, provider string, walk func(report.Func) error) (Summary, error) {
	workers := im.Workers
	if workers <= 0 {
		workers = 8
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu     sync.Mutex
		sum    Summary
		first  error
		latest time.Time
		wg     sync.WaitGroup
	)
	// Each worker owns the streams hashed to it, so that a stream's lines
	// are recorded in file order by one worker and two batches never take
	// the same streams in concurrent transactions.
	jobs := make([]chan delivery.Event, workers)
	count := func(ev delivery.Event, res ingest.Result) {
		if ev.Facts[0].Kind == delivery.KindPayoutLines {
			return // not a line of the file
		}
		mu.Lock()
		switch {
		case res.Outcome == ingest.Duplicate && res.Conflict:
			sum.Conflicts++
		case res.Outcome == ingest.Duplicate:
			sum.Duplicates++
		default:
			sum.New++
			sum.Appended += res.Appended
		}
		done := sum.New + sum.Duplicates + sum.Conflicts
		mu.Unlock()
		if im.Progress != nil {
			im.Progress(done)
		}
	}
	fail := func(ev delivery.Event, err error) {
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = fmt.Errorf("line %s: %w", ev.DedupKey, err)
			cancel()
		}
	}
	for i := range jobs {
		jobs[i] = make(chan delivery.Event, batchSize)
		wg.Go(func() { im.work(ctx, jobs[i], count, fail) })
	}
	send := func(ev delivery.Event) error {
		select {
		case jobs[streamWorker(ev.StreamID(), workers)] <- ev:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// Each payout is told which lines it holds, so that its stream can
	// prove it (payout_mismatch otherwise). Those deliveries go to the
	// worker of the payout's stream, in file order with its other lines
	// (fee rows): a writer of its own would race the worker's sets for the
	// stream, each lost race sending a set to be decided again line by line.
	counted := newPayoutCounter(provider)
	tell := func(bs []payoutBatch) error {
		for _, b := range bs {
			if err := send(delivery.PayoutLines(b.provider, b.payout, b.currency, b.lines, latest)); err != nil {
				return err
			}
		}
		return nil
	}
	perr := walk(func(rec report.Record) error {
		if rec.Line.OccurredAt.After(latest) {
			latest = rec.Line.OccurredAt
		}
		sum.Lines++
		if err := tell(counted.add(rec.Line)); err != nil {
			return err
		}
		return send(delivery.Settled(rec.Line, rec.Raw))
	})
	if perr == nil {
		perr = tell(counted.rest())
	}
	for _, j := range jobs {
		close(j)
	}
	wg.Wait()
	if first != nil {
		return sum, first
	}
	if perr != nil {
		return sum, perr
	}
	if im.Candidates != nil && im.UnsettledAfter > 0 && !latest.IsZero() {
		n, err := im.checkUnsettled(ctx, provider, latest)
		sum.Unsettled = n
		if err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// work records the deliveries of jobs in batches until it is closed.
func (im *Importer) work(ctx context.Context, jobs <-chan delivery.Event, count func(delivery.Event, ingest.Result), fail func(delivery.Event, error)) {
	batch := make([]delivery.Event, 0, batchSize)
	for ev := range jobs {
		batch = append(batch, ev)
		// Batch what is waiting, never wait for a batch to fill.
	fill:
		for len(batch) < batchSize {
			select {
			case ev, ok := <-jobs:
				if !ok {
					break fill
				}
				batch = append(batch, ev)
			default:
				break fill
			}
		}
		im.recordBatch(ctx, batch, count, fail)
		batch = batch[:0]
	}
}

// batchSize bounds the lines recorded in one unit of work (one set:
// ingest.Service.IngestBatch). Measured on 100,000-line Stripe reports
// (bench/run.sh settle): sets of 500 or 1,000 lines were no faster than 200
// on this 2-core machine, where Postgres is the bottleneck, and raised peak
// RSS from about 120 to 165 and 235 MiB.
const batchSize = 200

// BatchIngester records several deliveries in one unit of work
// (ingest.Service.IngestBatch): one commit per batch.
type BatchIngester interface {
	IngestBatch(ctx context.Context, evs []delivery.Event) ([]ingest.Result, error)
}

// recordBatch records a worker's batch: as one set when the ingester can
// (ingest.Service.IngestBatch: a constant number of statements per batch),
// else line by line. A failing line is named; the lines recorded before it
// are counted.
func (im *Importer) recordBatch(ctx context.Context, batch []delivery.Event, count func(delivery.Event, ingest.Result), fail func(delivery.Event, error)) {
	if b, ok := im.Ingest.(BatchIngester); ok && len(batch) > 1 {
		res, err := b.IngestBatch(ctx, batch)
		for i, r := range res {
			if r.Outcome != "" && i < len(batch) {
				count(batch[i], r)
			}
		}
		if err != nil {
			var be *ingest.BatchError
			if errors.As(err, &be) && be.At >= 0 && be.At < len(batch) {
				fail(batch[be.At], be.Err)
			} else {
				fail(batch[0], err)
			}
		}
		return
	}
	for _, ev := range batch {
		res, err := im.Ingest.Ingest(ctx, ev)
		if err != nil {
			fail(ev, err)
			return
		}
		count(ev, res)
	}
}

// streamWorker is the worker of a stream (FNV-1a of its id).
func streamWorker(stream string, workers int) int {
	h := uint32(2166136261)
	for i := 0; i < len(stream); i++ {
		h ^= uint32(stream[i])
		h *= 16777619
	}
	return int(h % uint32(workers))
}

// checkUnsettled asks the domain, for each payment of the provider that may
// have a capture older than UnsettledAfter before the report's latest line
// with no settlement line, to open `unsettled` (delivery.UnsettledCheck:
// one delivery per payment and report date, so a re-import adds nothing).
func (im *Importer) checkUnsettled(ctx context.Context, provider string, asOf time.Time) (int, error) {
	ids, err := im.Candidates.UnsettledCandidates(ctx, provider, asOf.Add(-im.UnsettledAfter))
	if err != nil {
		return 0, fmt.Errorf("unsettled check: %w", err)
	}
	sort.Strings(ids)
	n := 0
	for _, id := range ids {
		res, err := im.Ingest.Ingest(ctx, delivery.UnsettledCheck(provider, id, asOf, im.UnsettledAfter))
		if err != nil {
			return n, fmt.Errorf("unsettled check of %s: %w", id, err)
		}
		if res.Appended > 0 {
			n++
		}
	}
	return n, nil
}

// payoutBatch is up to settlement.MaxCountedPerDelivery lines of one payout.
type payoutBatch struct {
	provider, payout string
	currency         money.Currency
	lines            []settlement.Counted
}

// maxHeldCounted bounds the payout lines held, across every payout open,
// before they are delivered: a report of many small payouts (Adyen batches,
// Square's daily payouts, Stripe's) would otherwise hold every line's key
// until its end, memory growing with the file (issue 24 item 14: about a
// hundred bytes a line, times the collector's headroom). 16,000 keys are
// about 2 MiB.
const maxHeldCounted = 16 * settlement.MaxCountedPerDelivery

// payoutCounter gathers the lines of each payout a report lists (not the
// payout lines themselves, which carry the payout's amount), in batches of
// bounded size, and hands them out when a payout's batch is full or when
// maxHeldCounted lines are held: memory is bounded whatever the file and
// its payouts. Where the batches are cut depends only on the file's lines
// in order, so importing the same file again delivers the same batches
// (duplicates); a payout that lines of another cut counted already counts
// each line once (delivery.KindPayoutLines).
type payoutCounter struct {
	provider string
	open     map[string]*payoutBatch
	order    []string // payouts (and currencies) in the order they first appeared since the last cut
	held     int      // lines in open batches
}

func newPayoutCounter(provider string) *payoutCounter {
	return &payoutCounter{provider: provider, open: map[string]*payoutBatch{}}
}

// add counts l; it returns the batches to deliver now (none, a full one,
// or every open one when too many lines are held).
func (c *payoutCounter) add(l settlement.Line) []payoutBatch {
	if l.PayoutID == "" || l.Kind == settlement.KindPayout {
		return nil
	}
	// One batch per payout and currency: a payout is proven only by its
	// lines in its own currency (CONTRACT: "a line in another currency
	// never reconciles it"), so each batch says the currency of its lines.
	k := l.PayoutID + "\x00" + string(l.Currency)
	b, ok := c.open[k]
	if !ok {
		b = &payoutBatch{provider: c.provider, payout: l.PayoutID, currency: l.Currency}
		c.open[k] = b
		c.order = append(c.order, k)
	}
	b.lines = append(b.lines, settlement.Counted{Key: l.DedupKey(), Net: l.Net})
	c.held++
	switch {
	case len(b.lines) >= settlement.MaxCountedPerDelivery:
		full := *b
		b.lines = nil
		c.held -= len(full.lines)
		return []payoutBatch{full}
	case c.held >= maxHeldCounted:
		return c.rest()
	}
	return nil
}

// rest returns the batches not delivered yet, in the order their payouts
// first appeared, and forgets them.
func (c *payoutCounter) rest() []payoutBatch {
	var out []payoutBatch
	for _, id := range c.order {
		if b := c.open[id]; len(b.lines) > 0 {
			out = append(out, *b)
		}
	}
	clear(c.open)
	c.order, c.held = c.order[:0], 0
	return out
}
