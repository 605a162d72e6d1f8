// Command seed fills a migrated, empty onceledger database with a realistic
// event history, fast, for the rebuild benchmark (bench/run.sh rebuild).
//
// The events are real domain events: each payment's provider deliveries
// (authorization, capture with fee, refunds, disputes) go through
// ingest.PaymentDecider, the decider the server uses, so types, JSON bodies,
// metadata and the deterministic event ids are exactly what ingestion would
// have stored. Payout streams (one payout.paid each) drain the provider
// balance. The rows are streamed into events with COPY, bypassing the
// recorder: this measures the rebuild, not ingestion.
//
// Payments are interleaved (a window of payments in flight, one delivery of
// each in turn), as a live feed would be. Versions are per stream from 0, so
// UNIQUE (stream_id, version) and UNIQUE (event_id) hold; tx_id and
// global_position take their defaults, one transaction per --tx-events.
//
//	go run ./bench/seed --database-url postgres://... --events 1000000
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

func main() {
	url := flag.String("database-url", os.Getenv("ONCELEDGER_DATABASE_URL"), "database (migrated, events empty)")
	total := flag.Int("events", 1_000_000, "events to write")
	txEvents := flag.Int("tx-events", 100_000, "events per COPY transaction")
	window := flag.Int("window", 256, "payments in flight at once (interleaving)")
	seed := flag.Uint64("seed", 1, "random seed")
	span := flag.Duration("span", 0, "spread the events' times over about this long from 2026-01-01 (0: a few milliseconds apart, as the rebuild bench has them)")
	flag.Parse()
	if *url == "" {
		fmt.Fprintln(os.Stderr, "seed: --database-url or ONCELEDGER_DATABASE_URL is required")
		os.Exit(2)
	}
	if err := run(context.Background(), *url, *total, *txEvents, *window, *seed, *span); err != nil {
		fmt.Fprintln(os.Stderr, "seed:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, url string, total, txEvents, window int, seed uint64, span time.Duration) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&n); err != nil {
		return err
	}
	if n != 0 {
		return fmt.Errorf("events is not empty (%d rows): seed a fresh database", n)
	}

	g := newGenerator(seed, window)
	if span > 0 && total > 0 {
		// 3 ticks an event on average: the events end about span later.
		g.tick = max(time.Millisecond, span/time.Duration(3*total))
	}
	start := time.Now()
	written := 0
	for written < total {
		src := &source{g: g, left: min(txEvents, total-written)}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			_, err := tx.CopyFrom(ctx, pgx.Identifier{"events"},
				[]string{"stream_id", "version", "event_id", "type", "data", "metadata", "recorded_at"}, src)
			return err
		})
		if err != nil {
			return fmt.Errorf("copy after %d events: %w", written, err)
		}
		written += src.done
	}
	el := time.Since(start)
	fmt.Printf("seeded %d events (%d payment streams, %d payout streams) in %s (%.0f events/s)\n",
		written, g.payments, g.payouts, el.Round(time.Millisecond), float64(written)/el.Seconds())
	if _, err := conn.Exec(ctx, `ANALYZE events`); err != nil {
		return err
	}
	return nil
}

// source feeds CopyFrom from the generator, left events at most.
type source struct {
	g    *generator
	left int
	done int
	row  []any
	err  error
}

func (s *source) Next() bool {
	if s.done >= s.left {
		return false
	}
	r, err := s.g.next()
	if err != nil {
		s.err = err
		return false
	}
	s.row = []any{r.stream, r.version, pgtype.UUID{Bytes: r.data.ID, Valid: true}, r.data.Type,
		string(r.data.Data), string(r.data.Metadata), r.at}
	s.done++
	return true
}

func (s *source) Values() ([]any, error) { return s.row, nil }
func (s *source) Err() error             { return s.err }

type row struct {
	stream  string
	version int64
	data    eventstore.EventData
	at      time.Time
}

// flow is one payment (or payout) in flight: its remaining deliveries and
// its history so far, which the decider folds like the recorder would.
type flow struct {
	stream     string
	deliveries []delivery.Event
	history    []eventstore.RecordedEvent
	queue      []row // decided events not yet emitted
}

type generator struct {
	rng      *rand.Rand
	window   []*flow
	cursor   int
	seq      int
	payments int
	payouts  int
	clock    time.Time
	tick     time.Duration // the clock's unit step (1 to 5 of them per event)
	// captured net (amount - fee) per provider/currency not yet paid out
	unpaid map[string]int64
}

func newGenerator(seed uint64, window int) *generator {
	return &generator{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), window: make([]*flow, window),
		clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), tick: time.Millisecond, unpaid: map[string]int64{}}
}

var (
	providersMix  = []string{"stripe", "standard", "adyen", "paypal", "square", "circle"}
	currenciesMix = []money.Currency{"USD", "USD", "USD", "EUR", "EUR", "GBP", "JPY"}
)

// next returns the next event of the interleaved feed.
func (g *generator) next() (row, error) {
	for {
		i := g.cursor
		g.cursor = (g.cursor + 1) % len(g.window)
		f := g.window[i]
		if f == nil || (len(f.queue) == 0 && len(f.deliveries) == 0) {
			f = g.newFlow()
			g.window[i] = f
		}
		if len(f.queue) == 0 {
			ev := f.deliveries[0]
			f.deliveries = f.deliveries[1:]
			decided, err := ingest.PaymentDecider{}.Decide(f.history, ev)
			if err != nil {
				return row{}, err
			}
			for _, d := range decided {
				v := int64(len(f.history))
				f.history = append(f.history, eventstore.RecordedEvent{ID: d.ID, StreamID: f.stream,
					Version: uint64(v), Type: d.Type, Data: d.Data, Metadata: d.Metadata})
				g.clock = g.clock.Add(time.Duration(1+g.rng.IntN(5)) * g.tick)
				f.queue = append(f.queue, row{stream: f.stream, version: v, data: d, at: g.clock})
			}
			if len(f.queue) == 0 {
				continue // a delivery that decided nothing (none in this mix, but harmless)
			}
		}
		r := f.queue[0]
		f.queue = f.queue[1:]
		return r, nil
	}
}

// newFlow starts a payment, or every 12th flow a payout of what the
// provider's captures have accumulated.
func (g *generator) newFlow() *flow {
	g.seq++
	prov := providersMix[g.rng.IntN(len(providersMix))]
	cur := currenciesMix[g.rng.IntN(len(currenciesMix))]
	key := prov + "/" + string(cur)
	at := g.clock
	if g.seq%12 == 0 && g.unpaid[key] > 0 {
		g.payouts++
		amount := g.unpaid[key] / 2
		g.unpaid[key] -= amount
		id := "po_seed" + strconv.Itoa(g.seq)
		ev := delivery.Event{Provider: prov, DedupKey: "evt_seed" + strconv.Itoa(g.seq) + "_payout", Type: "payout.paid",
			OccurredAt: at, PayloadHash: hash(g.seq, 0),
			Facts: []delivery.Fact{{Kind: delivery.KindPayoutPaid, BusinessID: id, Amount: amount, Currency: cur}}}
		return &flow{stream: ev.StreamID(), deliveries: []delivery.Event{ev}}
	}
	g.payments++
	pay := "pay_seed" + strconv.Itoa(g.seq)
	amount := int64(500 + g.rng.IntN(100_000))
	fee := amount*29/1000 + 30
	n := 0
	deliver := func(typ string, facts ...delivery.Fact) delivery.Event {
		n++
		return delivery.Event{Provider: prov, DedupKey: "evt_seed" + strconv.Itoa(g.seq) + "_" + strconv.Itoa(n),
			Type: typ, PaymentKey: pay, OccurredAt: at.Add(time.Duration(n) * time.Minute),
			PayloadHash: hash(g.seq, n), Facts: facts}
	}
	ds := []delivery.Event{
		deliver("payment_intent.amount_capturable_updated", delivery.Fact{Kind: delivery.KindAuthorized, BusinessID: "auth_" + pay, Amount: amount, Currency: cur}),
		deliver("charge.succeeded", delivery.Fact{Kind: delivery.KindCaptured, BusinessID: "ch_" + pay, Amount: amount, Fee: fee, Currency: cur}),
	}
	g.unpaid[key] += amount - fee
	refunded := int64(0)
	if g.rng.IntN(100) < 70 {
		r := amount / int64(2+g.rng.IntN(3))
		refunded += r
		ds = append(ds, deliver("refund.created", delivery.Fact{Kind: delivery.KindRefunded, BusinessID: "re1_" + pay, Amount: r, Currency: cur}))
		if g.rng.IntN(100) < 50 {
			r2 := (amount - refunded) / 2
			ds = append(ds, deliver("refund.created", delivery.Fact{Kind: delivery.KindRefunded, BusinessID: "re2_" + pay, Amount: r2, Currency: cur}))
			refunded += r2
		}
		g.unpaid[key] -= refunded
	}
	if g.rng.IntN(100) < 30 {
		d := amount - refunded
		ds = append(ds, deliver("charge.dispute.created", delivery.Fact{Kind: delivery.KindDisputeOpened, BusinessID: "dp_" + pay, Amount: d, Currency: cur}))
		if g.rng.IntN(2) == 0 {
			ds = append(ds, deliver("charge.dispute.closed", delivery.Fact{Kind: delivery.KindDisputeWon, BusinessID: "dp_" + pay, Amount: d, Currency: cur}))
		} else {
			ds = append(ds, deliver("charge.dispute.closed", delivery.Fact{Kind: delivery.KindDisputeLost, BusinessID: "dp_" + pay, Amount: d, Currency: cur}))
		}
	}
	ev := ds[0]
	return &flow{stream: ev.StreamID(), deliveries: ds}
}

// hash is a stand-in payload hash (hex, 64 chars), unique per delivery.
func hash(seq, n int) string {
	return fmt.Sprintf("%032x%032x", uint64(seq), uint64(n)+0x5eed)
}
