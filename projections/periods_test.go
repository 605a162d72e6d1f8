package projections_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/period"
	"github.com/onceledger/onceledger/projections"
	"github.com/onceledger/onceledger/projections/views"
)

// periodsFixture is the Postgres fixture with the projections in a
// reporting zone, the ingestion service serve uses, the period commands
// and a settable clock.
type periodsFixture struct {
	*fixture
	zone  *time.Location
	in    *ingest.Service
	ops   *operations.Periods
	clock time.Time
}

func newPeriodsFixture(t *testing.T, zone string) *periodsFixture {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	require.NoError(t, err)
	pool := pgtest.NewPool(t)
	es := postgres.NewEventStore(pool)
	db := readmodel.New(pool)
	f := &periodsFixture{
		fixture: &fixture{t: t, pool: pool, es: es, db: db, count: map[string]int{},
			svc: projections.NewService(es, db, nil, projections.ReportingZone(loc))},
		zone: loc,
		in:   ingest.New(postgres.NewJournal(pool, es), ingest.PaymentDecider{}, ingest.Options{}),
	}
	f.ops = operations.NewPeriods(es, loc, func() time.Time { return f.clock })
	return f
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

// deliver records one Standard Webhooks delivery of fact, effective at when.
func (f *periodsFixture) deliver(ctx context.Context, id, typ, payment, when string, fact delivery.Fact) {
	f.t.Helper()
	fact.Currency = "USD"
	res, err := f.in.Ingest(ctx, standardDelivery(id, typ, payment, at(when), fact))
	require.NoError(f.t, err)
	require.Equal(f.t, ingest.Accepted, res.Outcome, id)
}

// waitHead waits until every projection has projected the last event
// recorded (read from the table: the feed's Head may lag behind it while
// projector batches of this database are in flight).
func (f *periodsFixture) waitHead(ctx context.Context) {
	f.t.Helper()
	var c, p int64
	require.NoError(f.t, f.pool.QueryRow(ctx, `SELECT tx_id, global_position FROM events
		ORDER BY tx_id DESC, global_position DESC LIMIT 1`).Scan(&c, &p))
	head := eventstore.Position{Commit: uint64(c), Prepare: uint64(p)}
	var cps []projections.Checkpoint
	require.Eventually(f.t, func() bool {
		var err error
		cps, err = f.db.Checkpoints(ctx)
		if err != nil || len(cps) < len(f.svc.Names()) {
			return false
		}
		for _, cp := range cps {
			if cp.Position != head {
				return false
			}
		}
		return true
	}, time.Minute, 20*time.Millisecond, "projections at %s: %+v", head, &cps)
}

type booking struct {
	Account, Period, Adjusts string
	Amount                   int64
	Late                     bool
	Effective                time.Time
}

// bookings is every entry's booking, by event id, posting index and the
// delivery's event type.
func (f *periodsFixture) bookings(ctx context.Context) map[string]booking {
	f.t.Helper()
	rows, err := f.pool.Query(ctx, `SELECT event_id::text || '/' || posting_index || ' ' || event_type, account, period,
		coalesce(adjusts_period, ''), amount, late_adjustment, effective_at FROM ledger_entries`)
	require.NoError(f.t, err)
	defer rows.Close()
	out := map[string]booking{}
	for rows.Next() {
		var k string
		var b booking
		require.NoError(f.t, rows.Scan(&k, &b.Account, &b.Period, &b.Adjusts, &b.Amount, &b.Late, &b.Effective))
		out[k] = b
	}
	require.NoError(f.t, rows.Err())
	return out
}

// frozen is every period_balances row, as text.
func (f *periodsFixture) frozen(ctx context.Context) []string {
	f.t.Helper()
	rows, err := f.pool.Query(ctx, `SELECT concat_ws(' ', period, account, currency, opening, debits, credits, closing, content_hash)
		FROM period_balances ORDER BY period, account, currency`)
	require.NoError(f.t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(f.t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(f.t, rows.Err())
	return out
}

func (f *periodsFixture) trialBalance(ctx context.Context, p string) views.TrialBalance {
	f.t.Helper()
	tb, err := f.db.TrialBalance(ctx, period.MustParse(p))
	require.NoError(f.t, err)
	return tb
}

func lineOf(tb views.TrialBalance, account string) period.Balance {
	for _, l := range tb.Lines {
		if l.Account == account {
			return l
		}
	}
	return period.Balance{}
}

// An accountant closes November; a dispute of November arrives in
// December and is booked into December as an adjustment, November's
// figures stay as frozen; the journal carries it; verify recomputes the
// frozen figures from history; a rebuild books everything the same.
// Then November is reopened for a reason, takes a late refund itself, and
// closes again with new figures, which a rebuild reproduces too.
func TestLateFactsAfterACloseAreAdjustmentsAndSurviveARebuild(t *testing.T) {
	ctx := ctxT(t)
	f := newPeriodsFixture(t, "UTC")
	stop := f.run(ctx)
	defer func() { assert.NoError(t, stop()) }()

	nov := f.closeNovember(ctx)
	frozenBefore := f.frozen(ctx)
	f.lateFactsAreAdjustments(ctx, frozenBefore)
	f.periodsListAndJournalCarryTheAdjustments(ctx)

	vs, err := f.svc.Verify(ctx)
	require.NoError(t, err)
	assert.Empty(t, vs)
	before := f.bookings(ctx)
	rep, err := f.svc.Rebuild(ctx, nil, projections.RebuildOptions{BatchSize: 2})
	require.NoError(t, err)
	assert.Empty(t, rep.Differences)
	// The closes' figures came from the checksum pass's sums in memory:
	// no stored replay.
	assert.Equal(t, []string{projections.PhaseChecksumReplay}, replays(rep))
	assert.Equal(t, before, f.bookings(ctx), "a rebuild books every entry into the same period")
	assert.Equal(t, frozenBefore, f.frozen(ctx), "and freezes the same figures")

	f.reopenNovemberAndCloseAgain(ctx, nov)
	vs, err = f.svc.Verify(ctx)
	require.NoError(t, err)
	assert.Empty(t, vs)
	before, frozen := f.bookings(ctx), f.frozen(ctx)
	rep, err = f.svc.Rebuild(ctx, nil, projections.RebuildOptions{})
	require.NoError(t, err)
	assert.Empty(t, rep.Differences)
	assert.Equal(t, []string{projections.PhaseChecksumReplay}, replays(rep), "reopened and closed again")
	assert.Equal(t, before, f.bookings(ctx))
	assert.Equal(t, frozen, f.frozen(ctx))

	// Tampering with a frozen figure is caught by verify.
	_, err = f.pool.Exec(ctx, `UPDATE period_balances SET closing = closing + 1 WHERE period = '2026-11' AND account = 'revenue:sales'`)
	require.NoError(t, err)
	vs, err = f.svc.Verify(ctx)
	require.NoError(t, err)
	assert.True(t, hasCheck(vs, projections.CheckPeriodHash), "%v", vs)
}

// closeNovember books a November and an October capture and closes
// November (not before it has ended), which closes October with it; it
// returns November's trial balance.
func (f *periodsFixture) closeNovember(ctx context.Context) views.TrialBalance {
	t := f.t
	f.deliver(ctx, "msg_1", "payment.captured", "pay_1", "2026-11-10T12:00:00Z",
		delivery.Fact{Kind: delivery.KindCaptured, BusinessID: "ch_1", Amount: 10000, Fee: 300})
	f.deliver(ctx, "msg_2", "payment.captured", "pay_2", "2026-10-05T12:00:00Z",
		delivery.Fact{Kind: delivery.KindCaptured, BusinessID: "ch_2", Amount: 5000})
	f.waitHead(ctx)

	f.clock = at("2026-11-30T23:00:00Z")
	_, err := f.ops.ClosePeriod(ctx, period.MustParse("2026-11"), "alice", "too early")
	require.ErrorIs(t, err, period.ErrPeriodNotEnded)
	f.clock = at("2026-12-02T09:00:00Z")
	_, err = f.ops.ClosePeriod(ctx, period.MustParse("2026-11"), "alice", "November books")
	require.NoError(t, err)
	f.waitHead(ctx)

	nov := f.trialBalance(ctx, "2026-11")
	require.True(t, nov.Frozen)
	assert.Equal(t, "alice", nov.Info.ClosedBy)
	assert.Equal(t, "November books", nov.Info.CloseNote)
	assert.True(t, nov.Info.BooksStart)
	assert.Equal(t, period.Balance{Account: "revenue:sales", Currency: "USD", Opening: -5000, Credits: 10000, Closing: -15000},
		lineOf(nov, "revenue:sales"))
	oct := f.trialBalance(ctx, "2026-10")
	assert.True(t, oct.Frozen, "the first close closes the earlier periods with it")
	assert.Equal(t, int64(-5000), lineOf(oct, "revenue:sales").Closing)
	return nov
}

// lateFactsAreAdjustments delivers late facts (a dispute of November 20, a
// refund of October) and a December refund: the late ones are booked into
// December as adjustments, the closed figures stay frozenBefore.
func (f *periodsFixture) lateFactsAreAdjustments(ctx context.Context, frozenBefore []string) {
	t := f.t
	f.deliver(ctx, "msg_3", "dispute.opened", "pay_1", "2026-11-20T08:00:00Z",
		delivery.Fact{Kind: delivery.KindDisputeOpened, BusinessID: "du_1", Amount: 4000})
	f.deliver(ctx, "msg_4", "refund.succeeded", "pay_2", "2026-10-30T08:00:00Z",
		delivery.Fact{Kind: delivery.KindRefunded, BusinessID: "re_1", Amount: 1000})
	f.deliver(ctx, "msg_5", "refund.succeeded", "pay_1", "2026-12-03T08:00:00Z",
		delivery.Fact{Kind: delivery.KindRefunded, BusinessID: "re_2", Amount: 500})
	f.waitHead(ctx)

	assert.Equal(t, frozenBefore, f.frozen(ctx), "closed figures never change")
	books := f.bookings(ctx)
	var late, dec int
	for k, b := range books {
		switch {
		case b.Late:
			late++
			assert.Equal(t, "2026-12", b.Period, k)
			assert.Contains(t, []string{"2026-10", "2026-11"}, b.Adjusts, k)
			assert.Equal(t, b.Adjusts, period.Of(b.Effective, time.UTC).String(), "effective time kept: %s", k)
		case b.Period == "2026-12":
			dec++
		}
	}
	assert.Equal(t, 4, late, "dispute and refund, two postings each")
	assert.Equal(t, 2, dec)

	decTB := f.trialBalance(ctx, "2026-12")
	assert.False(t, decTB.Frozen)
	assert.Len(t, decTB.Adjustments, 4)
	for _, a := range decTB.Adjustments {
		assert.Contains(t, []string{"dispute.opened", "refund.posted"}, a.EventType)
	}
	assert.Equal(t, period.Balance{Account: "receivable:disputes:standard", Currency: "USD", Debits: 4000, Closing: 4000},
		lineOf(decTB, "receivable:disputes:standard"))
	assert.Equal(t, period.Balance{Account: "provider:standard:balance", Currency: "USD", Opening: 14700, Credits: 5500, Closing: 9200},
		lineOf(decTB, "provider:standard:balance"))
}

// periodsListAndJournalCarryTheAdjustments: the period list counts
// December's adjustments, and the journal dates them in December, by
// period and by effective time, page by page.
func (f *periodsFixture) periodsListAndJournalCarryTheAdjustments(ctx context.Context) {
	t := f.t
	periods, err := f.db.Periods(ctx)
	require.NoError(t, err)
	var listed []string
	for _, p := range periods {
		listed = append(listed, p.Period.String()+" "+p.Status)
	}
	assert.Equal(t, []string{"2026-10 closed", "2026-11 closed", "2026-12 open"}, listed)
	assert.Equal(t, int64(4), periods[2].Adjustments)

	journal, err := f.db.Journal(ctx, views.JournalFilter{Period: period.MustParse("2026-12"), Zone: f.zone})
	require.NoError(t, err)
	require.Len(t, journal, 6)
	for _, j := range journal {
		assert.Equal(t, len(views.JournalColumns), len(j.Cells()))
		if j.Account == "receivable:disputes:standard" {
			assert.Equal(t, "2026-12-01", j.Date, "an adjustment is dated in the period it is booked into")
			assert.Equal(t, "40.00", j.DebitDecimal)
			assert.Equal(t, int64(4000), j.Debit)
			assert.Equal(t, "", j.CreditDecimal)
			assert.Equal(t, "pay_1", j.PaymentID)
			assert.Equal(t, "standard", j.Provider)
			assert.Equal(t, "dispute.opened (late: adjusts 2026-11)", j.Memo)
		}
		if j.Account == "revenue:refunds" && !j.LateAdjustment {
			assert.Equal(t, "2026-12-03", j.Date)
		}
	}
	all, err := f.db.Journal(ctx, views.JournalFilter{From: at("2026-11-01T00:00:00Z"), To: at("2026-12-01T00:00:00Z")})
	require.NoError(t, err)
	assert.Len(t, all, 5, "November by effective time: the capture (3) and the late dispute (2)")
	page, err := f.db.Journal(ctx, views.JournalFilter{Limit: 2, After: &all[0].Key,
		From: at("2026-11-01T00:00:00Z"), To: at("2026-12-01T00:00:00Z")})
	require.NoError(t, err)
	require.Len(t, page, 2)
	assert.Equal(t, all[1:3], page, "the page after the first row, in the same order")
}

// reopenNovemberAndCloseAgain reopens November (with a reason), lands a
// late November refund in November itself, and closes November again with
// new figures (nov: its first close's).
func (f *periodsFixture) reopenNovemberAndCloseAgain(ctx context.Context, nov views.TrialBalance) {
	t := f.t
	_, err := f.ops.ReopenPeriod(ctx, period.MustParse("2026-11"), "bob", "")
	require.ErrorIs(t, err, period.ErrReasonRequired)
	_, err = f.ops.ReopenPeriod(ctx, period.MustParse("2026-11"), "bob", "refund missing from the bank statement")
	require.NoError(t, err)
	f.deliver(ctx, "msg_6", "refund.succeeded", "pay_1", "2026-11-25T08:00:00Z",
		delivery.Fact{Kind: delivery.KindRefunded, BusinessID: "re_3", Amount: 200})
	f.waitHead(ctx)
	reopened := f.trialBalance(ctx, "2026-11")
	assert.False(t, reopened.Frozen)
	assert.Equal(t, "refund missing from the bank statement", reopened.Info.ReopenReason)
	assert.Equal(t, int64(200), lineOf(reopened, "revenue:refunds").Debits)
	_, err = f.ops.ClosePeriod(ctx, period.MustParse("2026-11"), "alice", "November, second close")
	require.NoError(t, err)
	f.waitHead(ctx)
	nov2 := f.trialBalance(ctx, "2026-11")
	require.True(t, nov2.Frozen)
	assert.NotEqual(t, nov.Info.ContentHash, nov2.Info.ContentHash)
	assert.Equal(t, "bob", nov2.Info.ReopenedBy)
}

// The reporting zone decides the month of an instant: near midnight UTC at
// a month's end, Los Angeles is still in the old month, Auckland already in
// the new one; a period closes once it has ended in the zone, and late
// facts are judged by the zone's month, not UTC's.
func TestMonthBoundaryInNonUTCZones(t *testing.T) {
	cases := []struct {
		zone string
		// the instant November ends in the zone, and one just before
		end, justBefore string
	}{
		{"America/Los_Angeles", "2026-12-01T08:00:00Z", "2026-12-01T07:59:59Z"},
		{"Pacific/Auckland", "2026-11-30T11:00:00Z", "2026-11-30T10:59:59Z"},
	}
	for _, c := range cases {
		t.Run(c.zone, func(t *testing.T) {
			ctx := ctxT(t)
			f := newPeriodsFixture(t, c.zone)
			stop := f.run(ctx)
			defer func() { assert.NoError(t, stop()) }()

			f.deliver(ctx, "msg_1", "payment.captured", "pay_1", c.justBefore,
				delivery.Fact{Kind: delivery.KindCaptured, BusinessID: "ch_1", Amount: 1000})
			f.deliver(ctx, "msg_2", "payment.captured", "pay_2", c.end,
				delivery.Fact{Kind: delivery.KindCaptured, BusinessID: "ch_2", Amount: 2000})
			f.waitHead(ctx)
			for _, b := range f.bookings(ctx) {
				want := map[int64]string{-1000: "2026-11", -2000: "2026-12"}[b.Amount]
				if want != "" {
					assert.Equal(t, want, b.Period, "%+v", b)
				}
			}

			f.clock = at(c.justBefore)
			_, err := f.ops.ClosePeriod(ctx, period.MustParse("2026-11"), "alice", "")
			require.ErrorIs(t, err, period.ErrPeriodNotEnded)
			f.clock = at(c.end)
			_, err = f.ops.ClosePeriod(ctx, period.MustParse("2026-11"), "alice", "")
			require.NoError(t, err)

			// A fact of the zone's November (late) and one of its December.
			f.deliver(ctx, "msg_3", "refund.succeeded", "pay_1", c.justBefore,
				delivery.Fact{Kind: delivery.KindRefunded, BusinessID: "re_1", Amount: 100})
			f.deliver(ctx, "msg_4", "refund.succeeded", "pay_2", c.end,
				delivery.Fact{Kind: delivery.KindRefunded, BusinessID: "re_2", Amount: 200})
			f.waitHead(ctx)
			for k, b := range f.bookings(ctx) {
				switch b.Account {
				case "revenue:refunds":
					assert.Equal(t, "2026-12", b.Period, k)
					assert.Equal(t, b.Amount == 100, b.Late, "%s: only the zone's November refund is late", k)
				case "revenue:sales":
					assert.False(t, b.Late, k)
				}
			}
			nov := f.trialBalance(ctx, "2026-11")
			assert.Equal(t, c.zone, nov.Info.Zone)
			assert.Equal(t, period.Balance{Account: "revenue:sales", Currency: "USD", Credits: 1000, Closing: -1000}, lineOf(nov, "revenue:sales"))
			journal, err := f.db.Journal(ctx, views.JournalFilter{Zone: f.zone})
			require.NoError(t, err)
			dates := map[string]bool{}
			for _, j := range journal {
				dates[fmt.Sprintf("%s %s %v", j.Date, j.Period, j.LateAdjustment)] = true
			}
			assert.Equal(t, map[string]bool{"2026-11-30 2026-11 false": true, "2026-12-01 2026-12 false": true, "2026-12-01 2026-12 true": true}, dates)

			vs, err := f.svc.Verify(ctx)
			require.NoError(t, err)
			assert.Empty(t, vs)
			before, frozen := f.bookings(ctx), f.frozen(ctx)
			rep, err := f.svc.Rebuild(ctx, nil, projections.RebuildOptions{})
			require.NoError(t, err)
			assert.Empty(t, rep.Differences)
			assert.Equal(t, []string{projections.PhaseChecksumReplay}, replays(rep))
			assert.Equal(t, before, f.bookings(ctx))
			assert.Equal(t, frozen, f.frozen(ctx))

			// Verifying in another zone than the books' says so.
			vs, err = projections.Verify(ctx, f.es, f.db)
			require.NoError(t, err)
			assert.True(t, hasCheck(vs, projections.CheckPeriodHash), "%v", vs)
		})
	}
}

// Over EventStoreDB the periods stream is part of the feed the projectors
// read ($all filtered by stream prefix): a close reaches the ledger
// projection, and a late fact after it is an adjustment.
func TestESDBFeedCarriesThePeriodsStream(t *testing.T) {
	t.Parallel()
	f := newESDBFixture(t)
	ctx := ctxT(t)
	stop := f.run(ctx)
	defer func() { assert.NoError(t, stop()) }()
	ops := operations.NewPeriods(f.store, time.UTC, func() time.Time { return at("2026-12-02T00:00:00Z") })

	f.recordDeliveries(ctx, standardDelivery("msg_1", "payment.captured", "pe_1", at("2026-11-10T00:00:00Z"),
		delivery.Fact{Kind: delivery.KindCaptured, BusinessID: "ch_1", Amount: 1000, Currency: "USD"}))
	_, err := ops.ClosePeriod(ctx, period.MustParse("2026-11"), "alice", "")
	require.NoError(t, err)
	f.recordDeliveries(ctx, standardDelivery("msg_2", "refund.succeeded", "pe_1", at("2026-11-20T00:00:00Z"),
		delivery.Fact{Kind: delivery.KindRefunded, BusinessID: "re_1", Amount: 100, Currency: "USD"}))
	f.waitAt(ctx, f.head(ctx))

	var late int
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*) FROM ledger_entries
		WHERE late_adjustment AND period = '2026-12' AND adjusts_period = '2026-11'`).Scan(&late))
	assert.Equal(t, 2, late)
	tb, err := f.db.TrialBalance(ctx, period.MustParse("2026-11"))
	require.NoError(t, err)
	assert.True(t, tb.Frozen)
	vs, err := f.svc.Verify(ctx)
	require.NoError(t, err)
	assert.Empty(t, vs)
}
