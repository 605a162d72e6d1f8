package projections

import (
	"context"
	"crypto/sha256"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections/views"
)

// The day's close per provider (docs/reference.md, "Provider days"): the
// reconciliation projection folds every event into the day it is about,
// in the provider's own bill zone, so that GET /v1/provider-days reads one
// row per day. Each row counts the day's facts (from webhooks, from report
// lines), its report lines, the lines no webhook delivered, the balances
// stated as of the day, whether an imported report or bill covers it, and
// a SHA-256 chain over the ids of the day's events with entries, in feed
// order: hash = SHA-256(hash ‖ event id, 16 bytes), from 32 zero bytes.
// A client recomputes it from /v1/journal: the provider's rows whose
// effective_at falls on the day, their distinct event ids in the journal's
// order. Rows remember the last event applied: a replayed batch adds
// nothing.

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

// dayPass carries one batch's contributions to provider days.
type dayPass struct {
	zone  *time.Location
	order []DayKey
	adds  map[DayKey][]dayAdd
	items []ItemDay
}

// dayAdd is what one event adds to one day.
type dayAdd struct {
	pos                      eventstore.Position
	id                       [16]byte
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
			a.entries = true
			if env.Event != nil && strings.HasPrefix(env.Event.Metadata().DedupKey, "settle:") {
				a.report = true
			} else {
				a.webhook = env.Event != nil
			}
		}
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

// flush applies the batch's contributions: rows read once, folded in feed
// order, written once.
func (d *dayPass) flush(ctx context.Context, w Writer) error {
	if len(d.items) > 0 {
		if err := w.RecordItemDays(ctx, d.items); err != nil {
			return err
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
