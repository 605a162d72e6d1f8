package readmodel

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/projections"
	"github.com/onceledger/onceledger/projections/views"
)

// The provider days' SQL (projections/providerdays.go): provider_days and
// item_days, written by the reconciliation projection, and
// GET /v1/provider-days.

var _ projections.ProviderDayWriter = (*writer)(nil)

const providerDayColumns = `provider, day::text, zone, events, webhook_facts, report_facts, report_lines, lines_without_webhook,
	stated_balances, covered, content_hash, last_commit, last_prepare, awaiting_report_facts`

func scanProviderDay(row pgx.CollectableRow) (views.ProviderDayRow, error) {
	var r views.ProviderDayRow
	var c, p int64
	err := row.Scan(&r.Provider, &r.Day, &r.Zone, &r.Events, &r.WebhookFacts, &r.ReportFacts, &r.ReportLines,
		&r.LinesWithoutWebhook, &r.StatedBalances, &r.Covered, &r.ContentHash, &c, &p, &r.AwaitingReportFacts)
	r.Last = eventstore.Position{Commit: uint64(c), Prepare: uint64(p)}
	return r, err
}

func (w *writer) ProviderDays(ctx context.Context, keys []projections.DayKey) (map[projections.DayKey]views.ProviderDayRow, error) {
	provs, days := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		provs[i], days[i] = k.Provider, k.Day
	}
	rows, err := w.tx.Query(ctx, `SELECT `+providerDayColumns+` FROM `+w.table("provider_days")+` d
		WHERE (provider, day) IN (SELECT * FROM unnest($1::text[], $2::date[]))`, provs, days)
	if err != nil {
		return nil, classify(err)
	}
	list, err := pgx.CollectRows(rows, scanProviderDay)
	if err != nil {
		return nil, classify(err)
	}
	out := make(map[projections.DayKey]views.ProviderDayRow, len(list))
	for _, r := range list {
		out[projections.DayKey{Provider: r.Provider, Day: r.Day}] = r
	}
	return out, nil
}

func (w *writer) UpsertProviderDays(ctx context.Context, rows []views.ProviderDayRow) error {
	if len(rows) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, r := range rows {
		c, p, err := position64(r.Last)
		if err != nil {
			return err
		}
		b.Queue(`INSERT INTO `+w.table("provider_days")+` (provider, day, zone, events, webhook_facts, report_facts, report_lines,
				lines_without_webhook, stated_balances, covered, content_hash, last_commit, last_prepare, awaiting_report_facts)
			VALUES ($1, $2::date, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
			ON CONFLICT (provider, day) DO UPDATE SET events = excluded.events, webhook_facts = excluded.webhook_facts,
				report_facts = excluded.report_facts, report_lines = excluded.report_lines,
				lines_without_webhook = excluded.lines_without_webhook, stated_balances = excluded.stated_balances,
				covered = excluded.covered, content_hash = excluded.content_hash, last_commit = excluded.last_commit,
				last_prepare = excluded.last_prepare, awaiting_report_facts = excluded.awaiting_report_facts`,
			r.Provider, r.Day, r.Zone, r.Events, r.WebhookFacts, r.ReportFacts, r.ReportLines, r.LinesWithoutWebhook,
			r.StatedBalances, r.Covered, r.ContentHash, c, p, r.AwaitingReportFacts)
	}
	return classify(w.tx.SendBatch(ctx, b).Close())
}

func (w *writer) RecordItemDays(ctx context.Context, items []projections.ItemDay) error {
	n := len(items)
	streams, kinds, keys, provs, days := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, it := range items {
		streams[i], kinds[i], keys[i], provs[i], days[i] = it.StreamID, it.Kind, it.Key, it.Provider, it.Day
	}
	_, err := w.tx.Exec(ctx, `INSERT INTO `+w.table("item_days")+` (stream_id, kind, item_key, provider, day)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::date[])
		ON CONFLICT DO NOTHING`, streams, kinds, keys, provs, days)
	return classify(err)
}

func (w *writer) DayFacts(ctx context.Context, keys []projections.FactKey) (map[projections.FactKey]projections.DayFact, error) {
	streams, facts := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		streams[i], facts[i] = k.StreamID, k.Fact
	}
	rows, err := w.tx.Query(ctx, `SELECT stream_id, fact, provider, day::text, settled FROM `+w.table("day_facts")+`
		WHERE (stream_id, fact) IN (SELECT * FROM unnest($1::text[], $2::text[]))`, streams, facts)
	if err != nil {
		return nil, classify(err)
	}
	out := make(map[projections.FactKey]projections.DayFact, len(keys))
	var f projections.DayFact
	_, err = pgx.ForEachRow(rows, []any{&f.StreamID, &f.Fact, &f.Provider, &f.Day, &f.Settled}, func() error {
		out[f.FactKey] = f
		return nil
	})
	return out, classify(err)
}

func (w *writer) UpsertDayFacts(ctx context.Context, facts []projections.DayFact) error {
	if len(facts) == 0 {
		return nil
	}
	n := len(facts)
	streams, keys, provs, days, settled := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]bool, n)
	for i, f := range facts {
		streams[i], keys[i], provs[i], days[i], settled[i] = f.StreamID, f.Fact, f.Provider, f.Day, f.Settled
	}
	_, err := w.tx.Exec(ctx, `INSERT INTO `+w.table("day_facts")+` (stream_id, fact, provider, day, settled)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::date[], $5::boolean[])
		ON CONFLICT (stream_id, fact) DO UPDATE SET settled = excluded.settled`, streams, keys, provs, days, settled)
	return classify(err)
}

// ProviderDays answers GET /v1/provider-days: every day of f's range for
// each provider (those with rows when f names none), from three indexed
// reads whatever the number of events: the provider_days rows, the
// differing assertions (a partial index: few), the open items about the
// days (item_days joined to the open items: few).
func (s *Store) ProviderDays(ctx context.Context, f views.ProviderDayFilter) ([]views.ProviderDay, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+providerDayColumns+` FROM provider_days
		WHERE ($1 = '' OR provider = $1) AND day BETWEEN $2::date AND $3::date ORDER BY provider, day`, f.Provider, f.From, f.To)
	if err != nil {
		return nil, qwrap("provider days", err)
	}
	stored, err := pgx.CollectRows(rows, scanProviderDay)
	if err != nil {
		return nil, qwrap("provider days", err)
	}
	byKey := map[[2]string]*views.ProviderDay{}
	for _, r := range stored {
		byKey[[2]string{r.Provider, r.Day}] = &views.ProviderDay{ProviderDayRow: r}
	}
	if err := s.dayFigures(ctx, f, byKey); err != nil {
		return nil, err
	}
	from, err1 := time.Parse(time.DateOnly, f.From)
	to, err2 := time.Parse(time.DateOnly, f.To)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("provider days: bad range %q..%q", f.From, f.To)
	}
	providers := []string{f.Provider}
	if f.Provider == "" {
		seen := map[string]bool{}
		providers = providers[:0]
		for k := range byKey {
			if !seen[k[0]] {
				seen[k[0]] = true
				providers = append(providers, k[0])
			}
		}
		sort.Strings(providers)
	}
	var out []views.ProviderDay
	for _, p := range providers {
		zone := projections.BillZone(p, f.Zone).String()
		for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
			day := d.Format(time.DateOnly)
			pd, ok := byKey[[2]string{p, day}]
			if !ok {
				pd = &views.ProviderDay{ProviderDayRow: views.ProviderDayRow{Provider: p, Day: day}}
			}
			if pd.Zone == "" {
				pd.Zone = zone
			}
			pd.Decide()
			out = append(out, *pd)
		}
	}
	return out, nil
}

// dayFigures adds the differing assertions and the open items to the days
// of byKey (creating rows for days that have only those).
func (s *Store) dayFigures(ctx context.Context, f views.ProviderDayFilter, byKey map[[2]string]*views.ProviderDay) error {
	get := func(p, d string) *views.ProviderDay {
		k := [2]string{p, d}
		if byKey[k] == nil {
			byKey[k] = &views.ProviderDay{ProviderDayRow: views.ProviderDayRow{Provider: p, Day: d}}
		}
		return byKey[k]
	}
	// The range's instants are widened by a day on each side: the days
	// are in each provider's own zone, decided per row below.
	rows, err := s.pool.Query(ctx, `
		SELECT provider, as_of FROM balance_assertions
		WHERE ledger <> stated AND ($1 = '' OR provider = $1)
		  AND as_of >= $2::date - 1 AND as_of < $3::date + 2`, f.Provider, f.From, f.To)
	if err != nil {
		return qwrap("provider days: assertions", err)
	}
	var p string
	var at time.Time
	if _, err := pgx.ForEachRow(rows, []any{&p, &at}, func() error {
		d := at.In(projections.BillZone(p, f.Zone)).Format(time.DateOnly)
		if d >= f.From && d <= f.To {
			get(p, d).DiffersBalances++
		}
		return nil
	}); err != nil {
		return qwrap("provider days: assertions", err)
	}
	rows, err = s.pool.Query(ctx, `
		SELECT d.provider, d.day::text, d.kind, count(*) FROM item_days d
		JOIN reconciliation_items r ON r.stream_id = d.stream_id AND r.kind = d.kind AND r.item_key = d.item_key
		WHERE r.status = 'open' AND ($1 = '' OR d.provider = $1) AND d.day BETWEEN $2::date AND $3::date
		GROUP BY 1, 2, 3`, f.Provider, f.From, f.To)
	if err != nil {
		return qwrap("provider days: items", err)
	}
	var day, kind string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&p, &day, &kind, &n}, func() error {
		pd := get(p, day)
		if pd.OpenItems == nil {
			pd.OpenItems = map[string]int64{}
		}
		pd.OpenItems[kind] += n
		return nil
	})
	return qwrap("provider days: items", err)
}
