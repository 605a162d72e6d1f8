package projections

import (
	"context"
	"crypto/sha256"
	"strconv"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/domain/settlement"
	"github.com/onceledger/onceledger/projections/views"
)

// The day's close per provider (docs/reference.md, "Provider days"): the
// reconciliation projection folds every event into the day it is about,
// in the provider's own bill zone, so that GET /v1/provider-days reads one
// row per day. Each row counts the day's facts (from webhooks, from report
// lines), its report lines, the lines no webhook delivered, the balances
// stated as of the day, whether an imported report or bill covers it, and
// a SHA-256 chain over the day's events with entries, in feed order, each
// by its id and its facts hash: hash = SHA-256(hash ‖ event id, 16 bytes ‖
// facts hash, 32 bytes), from 32 zero bytes. An event's facts hash
// (FactsHash) is SHA-256 over its postings as the journal lists them, so
// that a changed amount, account or currency changes the day's hash, not
// only a changed set of events. A client recomputes both from /v1/journal:
// the provider's rows whose effective_at falls on the day, grouped by
// event_id in the journal's order. Rows remember the last event applied: a
// replayed batch adds nothing.

// ProviderDayRow is one provider_days row.
type ProviderDayRow = views.ProviderDayRow

// DayKey is one provider's day.
type DayKey struct {
	Provider string
	Day      string // YYYY-MM-DD in the provider's bill zone
}

// ProviderDayWriter is the provider-days part of Writer.
type ProviderDayWriter interface {
	// ProviderDays reads the stored rows of keys (absent: none yet).
	ProviderDays(ctx context.Context, keys []DayKey) (map[DayKey]ProviderDayRow, error)
	// UpsertProviderDays writes rows whole.
	UpsertProviderDays(ctx context.Context, rows []ProviderDayRow) error
	// RecordItemDays records the day each item's facts are about (the
	// first stays).
	RecordItemDays(ctx context.Context, items []ItemDay) error
	// DayFacts reads the stored facts of keys (absent: none yet).
	DayFacts(ctx context.Context, keys []FactKey) (map[FactKey]DayFact, error)
	// UpsertDayFacts writes facts whole.
	UpsertDayFacts(ctx context.Context, facts []DayFact) error
}

// FactKey is one business fact of a payment stream: "capture:ID" or
// "refund:ID".
type FactKey struct{ StreamID, Fact string }

// DayFact is a webhook fact awaiting a report (Settled false), or one a
// report or bill line has settled.
type DayFact struct {
	FactKey
	Provider, Day string
	Settled       bool
}

// ItemDay is the day an item's facts are about.
type ItemDay struct {
	StreamID, Kind, Key string
	Provider, Day       string
}

// BillZone is the zone a provider's days are counted in: Alipay's and
// WeChat Pay's bills are in Beijing time; the others' in the reporting
// zone.
func BillZone(provider string, reporting *time.Location) *time.Location {
	switch provider {
	case "alipay", "wechatpay":
		return shanghai
	}
	if reporting == nil {
		return time.UTC
	}
	return reporting
}

// shanghai is Asia/Shanghai; without the zone database, UTC+8 (China has
// kept no daylight saving time since 1991).
var shanghai = func() *time.Location {
	if l, err := time.LoadLocation("Asia/Shanghai"); err == nil {
		return l
	}
	return time.FixedZone("Asia/Shanghai", 8*3600)
}()

// FactsHash is an event's facts hash in the provider day's content hash:
// SHA-256 over its postings in posting order (the journal's order of its
// rows), each as account, currency and the signed amount in minor units
// (the journal's debit_minor − credit_minor), each followed by a newline:
// "provider:stripe:balance\nUSD\n970\n". Text a user can rebuild from a
// /v1/journal row without knowing the event's encoding.
func FactsHash(ps []ledger.Posting) [sha256.Size]byte {
	h := sha256.New()
	var b []byte
	for _, p := range ps {
		b = append(b[:0], p.Account...)
		b = append(b, '\n')
		b = append(b, p.Currency...)
		b = append(b, '\n')
		b = strconv.AppendInt(b, p.Amount, 10)
		b = append(b, '\n')
		h.Write(b)
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// dayPass carries one batch's contributions to provider days.
type dayPass struct {
	zone  *time.Location
	order []DayKey
	adds  map[DayKey][]dayAdd
	items []ItemDay
	facts []factOp // in feed order
}

// factOp is a webhook's fact to await a report for (line false), or a
// report line settling one (line true).
type factOp struct {
	key  FactKey
	day  DayKey
	line bool
}

// dayAdd is what one event adds to one day.
type dayAdd struct {
	pos                      eventstore.Position
	id                       [16]byte
	facts                    [sha256.Size]byte // FactsHash of the event's postings
	entries, webhook, report bool
	lines, missing, stated   int64
	covers                   bool
}

func (d *dayPass) key(provider string, at time.Time) DayKey {
	return DayKey{Provider: provider, Day: at.In(BillZone(provider, d.zone)).Format(time.DateOnly)}
}

func (d *dayPass) push(k DayKey, a dayAdd) {
	if d.adds == nil {
		d.adds = map[DayKey][]dayAdd{}
	}
	if _, ok := d.adds[k]; !ok {
		d.order = append(d.order, k)
	}
	d.adds[k] = append(d.adds[k], a)
}

// add folds one envelope.
func (d *dayPass) add(env Envelope) {
	base := dayAdd{pos: env.Recorded.Position, id: env.Recorded.ID}
	if ps, provider, at := postingsOf(env); provider != "" {
		if at.IsZero() {
			at = env.Recorded.RecordedAt
		}
		a := base
		if len(ps) > 0 {
			a.entries, a.facts = true, FactsHash(ps)
			if env.Event != nil && strings.HasPrefix(env.Event.Metadata().DedupKey, "settle:") {
				a.report = true
			} else {
				a.webhook = env.Event != nil
			}
		}
		d.awaiting(env, provider, at, a.webhook)
		switch e := env.Event.(type) {
		case payment.LineSettled:
			a.lines, a.covers = 1, true
		case payment.Flagged:
			k := d.key(provider, at)
			d.items = append(d.items, ItemDay{StreamID: env.Recorded.StreamID, Kind: e.Kind, Key: e.Key, Provider: provider, Day: k.Day})
			if e.Kind == payment.ReconMissingWebhook {
				a.missing = 1
			}
		}
		if a.entries || a.lines > 0 || a.missing > 0 {
			d.push(d.key(provider, at), a)
		}
	}
	if s, ok := env.Assertion.(assertion.Stated); ok {
		// A file's statement covers its days; a person's or an API's
		// (Stripe's GET /v1/balance) states a balance without covering.
		covers := s.Actor == "" && !strings.Contains(s.Source, "GET /")
		n := map[DayKey]int64{}
		var keys []DayKey
		for _, p := range s.Points {
			k := d.key(s.Provider, p.AsOf)
			if _, ok := n[k]; !ok {
				keys = append(keys, k)
			}
			n[k]++
		}
		for _, k := range keys {
			a := base
			a.stated, a.covers = n[k], covers
			d.push(k, a)
		}
	}
}

// awaiting notes the facts a webhook recorded that await a report, and
// the report lines that settle them: captures by capture id, refunds by
// refund id, within their payment stream.
func (d *dayPass) awaiting(env Envelope, provider string, at time.Time, webhook bool) {
	stream := env.Recorded.StreamID
	op := func(fact string, line bool) {
		d.facts = append(d.facts, factOp{key: FactKey{StreamID: stream, Fact: fact}, day: d.key(provider, at), line: line})
	}
	switch e := env.Event.(type) {
	case payment.Captured:
		if webhook && e.CaptureID != "" {
			op("capture:"+e.CaptureID, false)
		}
	case payment.RefundPosted:
		if webhook && e.RefundID != "" {
			op("refund:"+e.RefundID, false)
		}
	case payment.LineSettled:
		switch {
		case e.Line.Kind == settlement.KindCharge && e.Line.CaptureID != "":
			op("capture:"+e.Line.CaptureID, true)
		case e.Line.Kind == settlement.KindRefund && e.Line.RefundID != "":
			op("refund:"+e.Line.RefundID, true)
		}
	}
}

// settleFacts folds the batch's fact operations into day_facts and
// returns what they change in each day's count of facts awaiting a
// report. The stored state makes each change once: a replayed batch finds
// its webhook facts stored and its lines' facts settled.
func (d *dayPass) settleFacts(ctx context.Context, w Writer) (map[DayKey]int64, error) {
	if len(d.facts) == 0 {
		return nil, nil
	}
	keys := make([]FactKey, 0, len(d.facts))
	for _, op := range d.facts {
		keys = append(keys, op.key)
	}
	stored, err := w.DayFacts(ctx, keys)
	if err != nil {
		return nil, err
	}
	delta := map[DayKey]int64{}
	var changed []FactKey
	inChanged := map[FactKey]bool{}
	for _, op := range d.facts {
		f, ok := stored[op.key]
		switch {
		case !op.line && !ok:
			f = DayFact{FactKey: op.key, Provider: op.day.Provider, Day: op.day.Day}
			delta[op.day]++
		case op.line && !ok:
			// The line came first: the webhook's fact will find it settled.
			f = DayFact{FactKey: op.key, Provider: op.day.Provider, Day: op.day.Day, Settled: true}
		case op.line && !f.Settled:
			f.Settled = true
			delta[DayKey{Provider: f.Provider, Day: f.Day}]--
		default:
			continue // a second webhook for the fact, or a second line
		}
		if !inChanged[op.key] {
			inChanged[op.key] = true
			changed = append(changed, op.key)
		}
		stored[op.key] = f
	}
	facts := make([]DayFact, 0, len(changed))
	for _, k := range changed {
		facts = append(facts, stored[k])
	}
	return delta, w.UpsertDayFacts(ctx, facts)
}

// flush applies the batch's contributions: rows read once, folded in feed
// order, written once.
func (d *dayPass) flush(ctx context.Context, w Writer) error {
	if len(d.items) > 0 {
		if err := w.RecordItemDays(ctx, d.items); err != nil {
			return err
		}
	}
	delta, err := d.settleFacts(ctx, w)
	if err != nil {
		return err
	}
	for k := range delta {
		if _, ok := d.adds[k]; !ok {
			d.push(k, dayAdd{}) // a zero position: adds nothing but its delta
		}
	}
	if len(d.order) == 0 {
		return nil
	}
	stored, err := w.ProviderDays(ctx, d.order)
	if err != nil {
		return err
	}
	rows := make([]ProviderDayRow, 0, len(d.order))
	for _, k := range d.order {
		r, ok := stored[k]
		if !ok {
			r = ProviderDayRow{Provider: k.Provider, Day: k.Day, Zone: BillZone(k.Provider, d.zone).String(),
				ContentHash: make([]byte, sha256.Size)}
		}
		changed := false
		if n := delta[k]; n != 0 {
			r.AwaitingReportFacts += n
			changed = true
		}
		for _, a := range d.adds[k] {
			if !r.Last.Less(a.pos) {
				continue // applied before: a replayed batch
			}
			changed = true
			r.Last = a.pos
			if a.entries {
				r.Events++
				h := sha256.New()
				h.Write(r.ContentHash)
				h.Write(a.id[:])
				h.Write(a.facts[:])
				r.ContentHash = h.Sum(nil)
			}
			if a.webhook {
				r.WebhookFacts++
			}
			if a.report {
				r.ReportFacts++
			}
			r.ReportLines += a.lines
			r.LinesWithoutWebhook += a.missing
			r.StatedBalances += a.stated
			r.Covered = r.Covered || a.covers
		}
		if changed {
			rows = append(rows, r)
		}
	}
	return w.UpsertProviderDays(ctx, rows)
}
