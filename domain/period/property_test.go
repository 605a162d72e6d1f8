package period_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/domain/period"
)

type acctCur struct {
	account  string
	currency money.Currency
}

// logged is one event of the global feed the property test builds: a
// payment event or a calendar event, in recording order.
type logged struct {
	payment payment.Event
	period  period.Event
}

// For any arrival order of a payment's deliveries and any close times:
// the figures frozen when a period closes are the figures of that period
// at the end (late facts never change a closed period); the activity of
// all periods sums to the all-time balance; every entry is booked into
// exactly one period, an open one, late exactly when its effective period
// was closed; and replaying the recorded feed reproduces every booking.
func TestClosedFiguresNeverChange(t *testing.T) {
	zones := []string{"UTC", "America/Los_Angeles", "Pacific/Auckland"}
	rapid.Check(t, func(t *rapid.T) {
		loc, err := time.LoadLocation(rapid.SampledFrom(zones).Draw(t, "zone"))
		if err != nil {
			t.Fatal(err)
		}
		deliveries := genDeliveries(t)
		order := rapid.Permutation(deliveries).Draw(t, "arrival")
		closeAt := genCloses(t, len(order))

		r := newBooking(t, loc)
		for i, d := range order {
			r.close(closeAt[i])
			r.deliver(d)
		}
		r.close(closeAt[len(order)])

		r.closedFiguresNeverChanged()
		r.periodsAddUpToTheAllTimeBalance()
		r.replayBooksTheSame()
	})
}

// genCloses draws closes of consecutive months from a random first one,
// each before a random one of n arrivals (n: after the last), sorted:
// closes keep their month order.
func genCloses(t *rapid.T, n int) map[int][]period.Period {
	first := period.MustParse("2026-10").Next()
	for range rapid.IntRange(0, 3).Draw(t, "first offset") {
		first = first.Next()
	}
	closeAt := map[int][]period.Period{}
	at := 0
	next := first
	for range rapid.IntRange(0, 4).Draw(t, "closes") {
		at = rapid.IntRange(at, n).Draw(t, "close before arrival")
		closeAt[at] = append(closeAt[at], next)
		next = next.Next()
	}
	return closeAt
}

// booking is one run of the property: the books, the feed they recorded,
// the entries they booked, and what the test keeps beside them.
type booking struct {
	t             *rapid.T
	loc           *time.Location
	books         *period.Books
	feed          []logged
	entries       []period.Entry
	frozenAtClose map[period.Period]period.Frozen // each period's figures when it first closed
	allTime       map[acctCur]int64
	history       []payment.Event
}

func newBooking(t *rapid.T, loc *time.Location) *booking {
	return &booking{t: t, loc: loc, books: period.NewBooks(loc),
		frozenAtClose: map[period.Period]period.Frozen{}, allTime: map[acctCur]int64{}}
}

// close closes ps, in order, and keeps the figures each period froze.
func (r *booking) close(ps []period.Period) {
	for _, p := range ps {
		cal := r.books.Calendar()
		evs, err := cal.DecideClose(period.CloseCommand{Period: p, Zone: r.loc, Actor: "prop", Now: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)})
		if err != nil {
			r.t.Fatalf("close %s: %v", p, err)
		}
		if err := r.books.Apply(evs[0]); err != nil {
			r.t.Fatal(err)
		}
		r.feed = append(r.feed, logged{period: evs[0]})
		for q, f := range r.books.Frozen() {
			if _, ok := r.frozenAtClose[q]; !ok {
				r.frozenAtClose[q] = f
			}
		}
	}
}

// deliver decides d and books its events' postings, each entry into an
// open period, late exactly when its effective period was closed.
func (r *booking) deliver(d delivery.Event) {
	evs, err := payment.Decide(r.history, d)
	if err != nil {
		r.t.Fatalf("decide %s: %v", d.DedupKey, err)
	}
	r.history = append(r.history, evs...)
	for _, e := range evs {
		r.feed = append(r.feed, logged{payment: e})
		ps := payment.Postings(e)
		cal := r.books.Calendar()
		eff := period.Of(e.Metadata().OccurredAt, r.loc)
		booked, err := r.books.Post(e.Metadata().OccurredAt, ps)
		if err != nil {
			r.t.Fatal(err)
		}
		for _, en := range booked {
			r.allTime[acctCur{en.Account, en.Currency}] += en.Amount
			if en.Effective != eff || cal.IsClosed(en.Booked) || en.Late != cal.IsClosed(eff) ||
				en.Booked.Before(en.Effective) || en.Late != (en.Booked != en.Effective) {
				r.t.Fatalf("entry %+v booked wrongly (closed through %s)", en, cal.ClosedThrough())
			}
		}
		r.entries = append(r.entries, booked...)
	}
}

// closedFiguresNeverChanged: each closed period's figures, computed from
// every entry at the end, hash as they did when it closed.
func (r *booking) closedFiguresNeverChanged() {
	for p, f := range r.frozenAtClose {
		tb, err := period.Compute(p, r.entries)
		if err != nil {
			r.t.Fatal(err)
		}
		if h := period.Hash(p, tb.Lines); h != f.Hash {
			r.t.Fatalf("%s: frozen %v (%s), now %v (%s)", p, f.Lines, f.Hash, tb.Lines, h)
		}
	}
}

// periodsAddUpToTheAllTimeBalance: every entry is in exactly one period;
// the periods add up to the all-time balance, and the last period closes
// at it.
func (r *booking) periodsAddUpToTheAllTimeBalance() {
	var periods []period.Period
	seen := map[period.Period]bool{}
	for _, e := range r.entries {
		if !seen[e.Booked] {
			seen[e.Booked] = true
			periods = append(periods, e.Booked)
		}
	}
	perAccount := map[acctCur]int64{}
	var magnitude, counted int64
	for _, e := range r.entries {
		magnitude += max(e.Amount, -e.Amount)
	}
	var last period.Period
	for _, p := range periods {
		tb, err := period.Compute(p, r.entries)
		if err != nil {
			r.t.Fatal(err)
		}
		for _, l := range tb.Lines {
			perAccount[acctCur{l.Account, l.Currency}] += l.Debits - l.Credits
			counted += l.Debits + l.Credits
		}
		if last.Before(p) {
			last = p
		}
	}
	if counted != magnitude {
		r.t.Fatalf("periods count %d in debits and credits, the entries hold %d", counted, magnitude)
	}
	if !maps.Equal(nonZero(perAccount), nonZero(r.allTime)) {
		r.t.Fatalf("sum over periods %v, all-time %v", perAccount, r.allTime)
	}
	if !last.IsZero() {
		tb, _ := period.Compute(last, r.entries)
		closing := map[acctCur]int64{}
		for _, l := range tb.Lines {
			closing[acctCur{l.Account, l.Currency}] = l.Closing
		}
		if !maps.Equal(nonZero(closing), nonZero(r.allTime)) {
			r.t.Fatalf("closing of %s %v, all-time %v", last, closing, r.allTime)
		}
	}
}

// nonZero is m without its zero balances.
func nonZero(m map[acctCur]int64) map[acctCur]int64 {
	out := map[acctCur]int64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// replayBooksTheSame: a rebuild, the recorded feed replayed, books
// everything the same and freezes the same figures.
func (r *booking) replayBooksTheSame() {
	again := period.NewBooks(r.loc)
	var replayed []period.Entry
	for _, l := range r.feed {
		if l.period != nil {
			if err := again.Apply(l.period); err != nil {
				r.t.Fatal(err)
			}
			continue
		}
		es, err := again.Post(l.payment.Metadata().OccurredAt, payment.Postings(l.payment))
		if err != nil {
			r.t.Fatal(err)
		}
		replayed = append(replayed, es...)
	}
	if fmt.Sprint(replayed) != fmt.Sprint(r.entries) {
		r.t.Fatalf("replay booked differently:\n%v\n%v", replayed, r.entries)
	}
	if !maps.EqualFunc(again.Frozen(), r.books.Frozen(), func(a, b period.Frozen) bool { return a.Hash == b.Hash }) {
		r.t.Fatalf("replay froze differently")
	}
}

// genDeliveries is one payment's deliveries, each effective at a random
// instant between October 2026 and February 2027: a capture, refunds and
// disputes with outcomes, some reported twice.
func genDeliveries(t *rapid.T) []delivery.Event {
	cur := rapid.SampledFrom([]money.Currency{"USD", "JPY", "EUR"}).Draw(t, "currency")
	from := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	span := int64(time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC).Sub(from) / time.Minute)
	var out []delivery.Event
	add := func(f delivery.Fact) {
		f.Currency = cur
		n := len(out) + 1
		out = append(out, delivery.Event{
			Provider: "stripe", DedupKey: fmt.Sprintf("evt_%d", n), Type: string(f.Kind), PaymentKey: "pay_1",
			OccurredAt: from.Add(time.Duration(rapid.Int64Range(0, span).Draw(t, "minute")) * time.Minute),
			Facts:      []delivery.Fact{f},
		})
		if rapid.Bool().Draw(t, "reported twice") {
			again := out[len(out)-1]
			again.DedupKey = fmt.Sprintf("alias_%d", n)
			out = append(out, again)
		}
	}
	amount := rapid.Int64Range(1, 1_000_000).Draw(t, "amount")
	add(delivery.Fact{Kind: delivery.KindCaptured, BusinessID: "ch_1", Amount: amount, Fee: rapid.Int64Range(0, amount).Draw(t, "fee")})
	for i := range rapid.IntRange(0, 2).Draw(t, "refunds") {
		add(delivery.Fact{Kind: delivery.KindRefunded, BusinessID: fmt.Sprintf("re_%d", i), Amount: rapid.Int64Range(1, amount).Draw(t, "refund")})
	}
	for i := range rapid.IntRange(0, 2).Draw(t, "disputes") {
		id := fmt.Sprintf("du_%d", i)
		d := rapid.Int64Range(1, amount).Draw(t, "dispute")
		add(delivery.Fact{Kind: delivery.KindDisputeOpened, BusinessID: id, Amount: d})
		switch rapid.IntRange(0, 2).Draw(t, "outcome") {
		case 1:
			add(delivery.Fact{Kind: delivery.KindDisputeWon, BusinessID: id, Amount: d})
		case 2:
			add(delivery.Fact{Kind: delivery.KindDisputeLost, BusinessID: id, Amount: d})
		}
	}
	return out
}

// With reopens too: operators close and reopen months in any interleaving
// with the deliveries (within the rules). Whatever is closed at the end
// has the figures frozen at its last close, entries are never booked into a
// period closed at the time, and a replay of the feed reproduces it all.
func TestReopenAndCloseAgainStayConsistent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		loc := time.UTC
		pending := rapid.Permutation(genDeliveries(t)).Draw(t, "arrival")
		books := period.NewBooks(loc)
		var feed []logged
		var entries []period.Entry
		var history []payment.Event
		frozenAtLastClose := map[period.Period]string{}
		later := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
		for len(pending) > 0 {
			cal := books.Calendar()
			var evs []period.Event
			var err error
			switch rapid.IntRange(0, 5).Draw(t, "action") {
			case 0: // close the next month (the first: any month)
				p := cal.ClosedThrough()
				switch {
				case cal.Start().IsZero():
					p = period.MustParse("2026-10")
					for range rapid.IntRange(0, 4).Draw(t, "start") {
						p = p.Next()
					}
				case p.IsZero():
					p = cal.Start()
				default:
					p = p.Next()
				}
				evs, err = cal.DecideClose(period.CloseCommand{Period: p, Zone: loc, Actor: "op", Now: later})
			case 1: // reopen the last closed month
				p := cal.ClosedThrough()
				if p.IsZero() {
					continue
				}
				evs, err = cal.DecideReopen(period.ReopenCommand{Period: p, Actor: "op", Reason: "why", Now: later})
			default:
				d := pending[0]
				pending = pending[1:]
				pevs, err := payment.Decide(history, d)
				if err != nil {
					t.Fatal(err)
				}
				history = append(history, pevs...)
				for _, e := range pevs {
					feed = append(feed, logged{payment: e})
					es, err := books.Post(e.Metadata().OccurredAt, payment.Postings(e))
					if err != nil {
						t.Fatal(err)
					}
					for _, en := range es {
						if cal.IsClosed(en.Booked) {
							t.Fatalf("%+v booked into a closed period", en)
						}
					}
					entries = append(entries, es...)
				}
				continue
			}
			if err != nil {
				t.Fatalf("decide: %v", err)
			}
			if err := books.Apply(evs[0]); err != nil {
				t.Fatal(err)
			}
			feed = append(feed, logged{period: evs[0]})
			for p, f := range books.Frozen() {
				frozenAtLastClose[p] = f.Hash
			}
		}
		for p, f := range books.Frozen() {
			tb, err := period.Compute(p, entries)
			if err != nil {
				t.Fatal(err)
			}
			if h := period.Hash(p, tb.Lines); h != f.Hash || h != frozenAtLastClose[p] {
				t.Fatalf("%s: frozen %s, now %s", p, f.Hash, h)
			}
		}
		again := period.NewBooks(loc)
		for _, l := range feed {
			if l.period != nil {
				if err := again.Apply(l.period); err != nil {
					t.Fatal(err)
				}
			} else if _, err := again.Post(l.payment.Metadata().OccurredAt, payment.Postings(l.payment)); err != nil {
				t.Fatal(err)
			}
		}
		if !maps.EqualFunc(again.Frozen(), books.Frozen(), func(a, b period.Frozen) bool { return a.Hash == b.Hash }) {
			t.Fatalf("replay froze differently")
		}
	})
}
