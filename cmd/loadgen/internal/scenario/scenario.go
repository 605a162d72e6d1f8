// Package scenario generates realistic webhook lifecycles for the load
// generator: for each payment, the deliveries a provider would send (with
// redeliveries, reordering and conflicting redeliveries mixed in) and the
// business facts the ledger must end up showing. The facts, not the
// deliveries, feed the expected ledger (package model): however the
// deliveries are duplicated or reordered, the facts are what they describe.
package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/onceledger/onceledger/cmd/loadgen/internal/model"
)

// Providers this package can generate.
const (
	Stripe    = "stripe"
	Standard  = "standard"
	Alipay    = "alipay"
	Wechatpay = "wechatpay"
)

// Config shapes the traffic.
type Config struct {
	Providers  []string // stripe, standard, alipay, wechatpay
	Duplicates float64  // extra identical deliveries per delivery (0.2: one in five gets a copy; 1.5: one or two)
	Reorder    float64  // share of payments whose refunds/disputes are sent before their capture
	Conflicts  float64  // share of deliveries redelivered under the same id with a changed payload
	TwinShare  float64  // share of the copies sent concurrently with the first delivery; default 0.3 when 0
	// RunID makes every id of the run unique, so runs against one database
	// never collide; the seed alone would repeat ids.
	RunID string
	Seed  uint64
	Start time.Time // event times start here
	// PayoutEvery: a payout per provider and currency after this many of
	// the provider's payments; default 25 when 0. Alipay and WeChat Pay
	// notify no payouts (their withdrawals come from the bills).
	PayoutEvery int
	// CN signs and encrypts Alipay and WeChat Pay bodies (cn.go).
	CN CN
}

// ErrConfig reports an unusable configuration.
var ErrConfig = errors.New("scenario config")

// Delivery is one webhook as the provider sends it.
type Delivery struct {
	Provider string
	ID       string // the dedup key: Stripe's evt_…, Standard's webhook-id, Alipay's notify_id, WeChat Pay's notification id
	Type     string
	Body     []byte
	// Conflict, when set, is a changed payload under the same ID, to be
	// sent only after Body was answered 2xx: it must not change the ledger.
	Conflict []byte
	Copies   int  // identical redeliveries to send after the first 2xx
	Twin     bool // one more identical delivery sent concurrently with the first
	// Signed and ConflictSigned, when set, are the signature headers of
	// Body and Conflict made before the run (the generator's --presign),
	// at SignedAt: a first attempt sends them instead of signing on the
	// clock. Retries sign afresh.
	Signed, ConflictSigned http.Header
	SignedAt               time.Time
}

// Lifecycle is a payment (or a payout) with its deliveries in the order to
// send them, and the facts that post.
type Lifecycle struct {
	Provider   string
	Key        string // payment key (pi_…, pay_…) or payout id
	Payout     bool
	Reordered  bool
	Deliveries []Delivery
	Facts      []model.Fact
}

// Generator produces lifecycles. It is not safe for concurrent use.
type Generator struct {
	cfg     Config
	rng     *rand.Rand
	seq     int
	clock   time.Time
	count   map[string]int              // payments per provider
	accrued map[string]map[string]int64 // provider → currency → net not yet paid out
}

// New validates cfg and returns a generator.
func New(cfg Config) (*Generator, error) {
	if len(cfg.Providers) == 0 {
		return nil, fmt.Errorf("%w: no providers", ErrConfig)
	}
	for _, p := range cfg.Providers {
		if p != Stripe && p != Standard && !isCN(p) {
			return nil, fmt.Errorf("%w: unknown provider %q (stripe, standard, alipay, wechatpay)", ErrConfig, p)
		}
		if err := cfg.CN.check(p); err != nil {
			return nil, err
		}
	}
	for name, v := range map[string]float64{"duplicates": cfg.Duplicates, "reorder": cfg.Reorder, "conflicts": cfg.Conflicts, "twin share": cfg.TwinShare} {
		if v < 0 || v != v {
			return nil, fmt.Errorf("%w: %s %v must be >= 0", ErrConfig, name, v)
		}
	}
	if cfg.Reorder > 1 || cfg.Conflicts > 1 || cfg.TwinShare > 1 {
		return nil, fmt.Errorf("%w: reorder, conflicts and twin share are ratios in [0,1]", ErrConfig)
	}
	if cfg.RunID == "" || strings.ContainsAny(cfg.RunID, " _/") {
		return nil, fmt.Errorf("%w: run id %q must be non-empty, without spaces, '_' or '/'", ErrConfig, cfg.RunID)
	}
	if cfg.TwinShare == 0 {
		cfg.TwinShare = 0.3
	}
	if cfg.PayoutEvery <= 0 {
		cfg.PayoutEvery = 25
	}
	if cfg.Start.IsZero() {
		cfg.Start = time.Now()
	}
	return &Generator{
		cfg:     cfg,
		rng:     rand.New(rand.NewPCG(cfg.Seed, 0x6c6f616467656e)),
		clock:   cfg.Start.UTC().Truncate(time.Second),
		count:   map[string]int{},
		accrued: map[string]map[string]int64{},
	}, nil
}

// Payment generates the next payment, followed by the payouts that fall due
// after it (a payout is its own lifecycle).
func (g *Generator) Payment() []Lifecycle {
	p := g.cfg.Providers[g.rng.IntN(len(g.cfg.Providers))]
	var s shape
	if isCN(p) {
		s = g.cnShape(p)
	} else {
		s = g.shape()
	}
	lc := Lifecycle{Provider: p, Facts: s.facts(p)}
	var drafts []draft
	switch p {
	case Stripe:
		lc.Key, drafts = g.stripePayment(s)
	case Alipay:
		lc.Key, drafts = g.alipayPayment(s)
	case Wechatpay:
		lc.Key, drafts = g.wechatpayPayment(s)
	default:
		lc.Key, drafts = g.standardPayment(s)
	}
	g.finish(&lc, drafts)
	out := []Lifecycle{lc}
	if isCN(p) {
		return out
	}

	if s.captured {
		net := s.amount - s.fee
		for _, r := range s.refunds {
			net -= r
		}
		if g.accrued[p] == nil {
			g.accrued[p] = map[string]int64{}
		}
		g.accrued[p][s.currency] += net
	}
	g.count[p]++
	if g.count[p]%g.cfg.PayoutEvery == 0 {
		curs := make([]string, 0, len(g.accrued[p]))
		for c := range g.accrued[p] {
			curs = append(curs, c)
		}
		slices.Sort(curs) // map order must not leak into a seeded run
		for _, c := range curs {
			amount := g.accrued[p][c] / 2
			if amount <= 0 {
				continue
			}
			g.accrued[p][c] -= amount
			out = append(out, g.payout(p, c, amount))
		}
	}
	return out
}

// shape is the business story of one payment, before it is told in a
// provider's words.
type shape struct {
	currency string
	amount   int64
	fee      int64
	captured bool
	refunds  []int64 // sum <= amount: no over-refund ambiguity
	dispute  int64   // 0: none
	outcome  string  // "", "won", "lost"
}

func (g *Generator) shape() shape {
	s := shape{currency: "USD"}
	switch r := g.rng.IntN(10); {
	case r == 0:
		s.currency = "JPY"
	case r <= 2:
		s.currency = "EUR"
	}
	s.amount = 100 + g.rng.Int64N(99_900)
	if g.rng.IntN(100) < 5 {
		return s // declined: authorized (or not) and failed, posts nothing
	}
	s.captured = true
	s.fee = s.amount*29/1000 + 30 // 2.9% + 30, in integer minor units
	switch r := g.rng.IntN(100); {
	case r < 20:
		first := 1 + g.rng.Int64N(s.amount)
		s.refunds = []int64{first}
		if rest := s.amount - first; rest > 0 && g.rng.IntN(10) < 3 {
			s.refunds = append(s.refunds, 1+g.rng.Int64N(rest))
		}
	case r < 25:
		s.dispute = s.amount
		switch o := g.rng.IntN(100); {
		case o < 40:
			s.outcome = "won"
		case o < 85:
			s.outcome = "lost"
		}
	}
	return s
}

// facts is what s posts, per docs/reference.md.
func (s shape) facts(p string) []model.Fact {
	if !s.captured {
		return nil
	}
	f := []model.Fact{{Provider: p, Kind: model.Capture, Currency: s.currency, Amount: s.amount, Fee: s.fee}}
	for _, r := range s.refunds {
		f = append(f, model.Fact{Provider: p, Kind: model.Refund, Currency: s.currency, Amount: r})
	}
	if s.dispute > 0 {
		f = append(f, model.Fact{Provider: p, Kind: model.DisputeOpened, Currency: s.currency, Amount: s.dispute})
		switch s.outcome {
		case "won":
			f = append(f, model.Fact{Provider: p, Kind: model.DisputeWon, Currency: s.currency, Amount: s.dispute})
		case "lost":
			f = append(f, model.Fact{Provider: p, Kind: model.DisputeLost, Currency: s.currency, Amount: s.dispute})
		}
	}
	return f
}

// phase orders a payment's deliveries: a reordered payment sends its
// after-capture deliveries (refunds, disputes) first, shuffled.
type phase int

const (
	phaseBefore phase = iota
	phaseCapture
	phaseAfter
)

// draft is a delivery not yet finalized: build renders the body, with
// every amount shifted by delta for a conflicting redelivery.
type draft struct {
	provider, id, typ string
	phase             phase
	build             func(delta int64) []byte
}

// finish applies reordering, redeliveries and conflicts to the drafts.
func (g *Generator) finish(lc *Lifecycle, drafts []draft) {
	hasAfter := slices.ContainsFunc(drafts, func(d draft) bool { return d.phase == phaseAfter })
	if hasAfter && g.rng.Float64() < g.cfg.Reorder {
		lc.Reordered = true
		var after, rest []draft
		for _, d := range drafts {
			if d.phase == phaseAfter {
				after = append(after, d)
			} else {
				rest = append(rest, d)
			}
		}
		g.rng.Shuffle(len(after), func(i, j int) { after[i], after[j] = after[j], after[i] })
		drafts = append(after, rest...)
	}
	lc.Deliveries = g.deliveries(drafts)
}

func (g *Generator) deliveries(drafts []draft) []Delivery {
	out := make([]Delivery, 0, len(drafts))
	for _, d := range drafts {
		dl := Delivery{Provider: d.provider, ID: d.id, Type: d.typ, Body: d.build(0)}
		dl.Copies = int(g.cfg.Duplicates)
		if g.rng.Float64() < g.cfg.Duplicates-float64(dl.Copies) {
			dl.Copies++
		}
		if dl.Copies > 0 && g.rng.Float64() < g.cfg.TwinShare {
			dl.Copies--
			dl.Twin = true
		}
		if g.rng.Float64() < g.cfg.Conflicts {
			dl.Conflict = d.build(1 + g.rng.Int64N(100))
		}
		out = append(out, dl)
	}
	return out
}

// next returns a fresh id suffix for the run, and advances the event clock.
func (g *Generator) next() string {
	g.seq++
	g.clock = g.clock.Add(time.Duration(g.rng.IntN(200)) * time.Millisecond)
	// "_" cannot occur in a run id: "ab"+"c1" and "abc"+"1" stay apart.
	return g.cfg.RunID + "_" + strconv.FormatInt(int64(g.seq), 36)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("scenario: encode %T: %v", v, err)) // maps of plain values always encode
	}
	return b
}
