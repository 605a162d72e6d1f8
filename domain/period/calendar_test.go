package period_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/period"
)

var now = time.Date(2027, 3, 15, 12, 0, 0, 0, time.UTC)

func mustClose(t *testing.T, c *period.Calendar, p string) period.Closed {
	t.Helper()
	evs, err := c.DecideClose(period.CloseCommand{Period: period.MustParse(p), Zone: time.UTC, Actor: "alice", Note: "month end", Now: now})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.NoError(t, c.Apply(evs[0]))
	return evs[0].(period.Closed)
}

func TestCloseRules(t *testing.T) {
	var c period.Calendar
	nov := period.MustParse("2026-11")
	assert.False(t, c.IsClosed(nov))
	book, late := c.Book(nov)
	assert.Equal(t, nov, book)
	assert.False(t, late)

	// The first close may be any ended month; it starts the books.
	ev := mustClose(t, &c, "2026-11")
	assert.Equal(t, period.Closed{Period: nov, Zone: "UTC", Actor: "alice", Note: "month end", At: now}, ev)
	assert.True(t, c.IsClosed(nov))
	assert.True(t, c.IsClosed(period.MustParse("2026-03")), "months before the start of the books count as closed")
	assert.Equal(t, nov, c.ClosedThrough())

	_, err := c.DecideClose(period.CloseCommand{Period: nov, Zone: time.UTC, Actor: "alice", Now: now})
	assert.ErrorIs(t, err, period.ErrAlreadyClosed)
	_, err = c.DecideClose(period.CloseCommand{Period: period.MustParse("2027-01"), Zone: time.UTC, Actor: "alice", Now: now})
	assert.ErrorIs(t, err, period.ErrEarlierPeriodOpen)
	_, err = c.DecideClose(period.CloseCommand{Period: period.MustParse("2026-12"), Zone: time.UTC, Now: now})
	assert.ErrorIs(t, err, period.ErrActorRequired)
	la, err := time.LoadLocation("America/Los_Angeles")
	require.NoError(t, err)
	_, err = c.DecideClose(period.CloseCommand{Period: period.MustParse("2026-12"), Zone: la, Actor: "alice", Now: now})
	assert.ErrorIs(t, err, period.ErrZoneMismatch)

	// A month closes only once it has ended, in the reporting zone.
	_, err = c.DecideClose(period.CloseCommand{Period: period.MustParse("2026-12"), Zone: time.UTC, Actor: "alice",
		Now: time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC)})
	assert.ErrorIs(t, err, period.ErrPeriodNotEnded)
	var c2 period.Calendar
	_, err = c2.DecideClose(period.CloseCommand{Period: period.MustParse("2026-11"), Zone: la, Actor: "alice",
		Now: time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)}) // 23:00 on Nov 30 in Los Angeles
	assert.ErrorIs(t, err, period.ErrPeriodNotEnded)

	mustClose(t, &c, "2026-12")
	book, late = c.Book(nov)
	assert.Equal(t, period.MustParse("2027-01"), book)
	assert.True(t, late)
	book, late = c.Book(period.MustParse("2027-02"))
	assert.Equal(t, period.MustParse("2027-02"), book)
	assert.False(t, late)
}

func TestReopenRules(t *testing.T) {
	var c period.Calendar
	_, err := c.DecideReopen(period.ReopenCommand{Period: period.MustParse("2026-11"), Actor: "bob", Reason: "x", Now: now})
	assert.ErrorIs(t, err, period.ErrNotClosed)
	mustClose(t, &c, "2026-11")
	mustClose(t, &c, "2026-12")

	_, err = c.DecideReopen(period.ReopenCommand{Period: period.MustParse("2026-12"), Actor: "bob", Now: now})
	assert.ErrorIs(t, err, period.ErrReasonRequired)
	_, err = c.DecideReopen(period.ReopenCommand{Period: period.MustParse("2026-11"), Actor: "bob", Reason: "late invoice", Now: now})
	assert.ErrorIs(t, err, period.ErrLaterPeriodClosed)
	assert.EqualError(t, err, "only the last closed period can be reopened: 2026-11 is closed, but the last closed period is 2026-12 (reopen it first)")
	// Before the start of the books: closed by the first close, and it
	// never reopens. The error says so, not "not closed".
	_, err = c.DecideReopen(period.ReopenCommand{Period: period.MustParse("2026-10"), Actor: "bob", Reason: "x", Now: now})
	assert.ErrorIs(t, err, period.ErrLaterPeriodClosed)
	assert.EqualError(t, err, "only the last closed period can be reopened: 2026-10 is before the start of the books (2026-11) and stays closed; the last closed period is 2026-12")

	evs, err := c.DecideReopen(period.ReopenCommand{Period: period.MustParse("2026-12"), Actor: "bob", Reason: "late invoice", Now: now})
	require.NoError(t, err)
	require.NoError(t, c.Apply(evs[0]))
	assert.Equal(t, period.MustParse("2026-11"), c.ClosedThrough())
	book, late := c.Book(period.MustParse("2026-12"))
	assert.Equal(t, period.MustParse("2026-12"), book)
	assert.False(t, late, "a reopened period takes its own late facts")

	evs, err = c.DecideReopen(period.ReopenCommand{Period: period.MustParse("2026-11"), Actor: "bob", Reason: "audit", Now: now})
	require.NoError(t, err)
	require.NoError(t, c.Apply(evs[0]))
	assert.True(t, c.ClosedThrough().IsZero())
	assert.True(t, c.IsClosed(period.MustParse("2026-10")), "the start of the books does not move")
	_, err = c.DecideReopen(period.ReopenCommand{Period: period.MustParse("2026-10"), Actor: "bob", Reason: "x", Now: now})
	assert.EqualError(t, err, "only the last closed period can be reopened: 2026-10 is before the start of the books (2026-11) and stays closed; none is closed now")
	assert.False(t, c.IsClosed(period.MustParse("2026-11")))
	_, err = c.DecideClose(period.CloseCommand{Period: period.MustParse("2026-12"), Zone: time.UTC, Actor: "alice", Now: now})
	assert.ErrorIs(t, err, period.ErrEarlierPeriodOpen)
	mustClose(t, &c, "2026-11")
}

func TestApplyRejectsInconsistentHistory(t *testing.T) {
	_, err := period.Fold([]period.Event{
		period.Closed{Period: period.MustParse("2026-11"), Zone: "UTC"},
		period.Closed{Period: period.MustParse("2027-01"), Zone: "UTC"},
	})
	assert.ErrorIs(t, err, period.ErrInconsistentEvents)
}

func TestCodecRoundTrip(t *testing.T) {
	for _, e := range []period.Event{
		period.Closed{Period: period.MustParse("2026-11"), Zone: "Pacific/Auckland", Actor: "alice", Note: "n", At: now},
		period.Reopened{Period: period.MustParse("2026-11"), Actor: "bob", Reason: "r", At: now.Add(time.Nanosecond)},
	} {
		typ, data, err := period.Encode(e)
		require.NoError(t, err)
		assert.True(t, period.IsEventType(typ))
		got, err := period.Decode(typ, data)
		require.NoError(t, err)
		assert.Equal(t, e, got)
	}
	typ, data, err := period.Encode(period.Closed{Period: period.MustParse("2026-11"), Zone: "UTC", Actor: "a", Note: "n", At: now})
	require.NoError(t, err)
	assert.Equal(t, "period.closed", typ)
	assert.JSONEq(t, `{"period":"2026-11","zone":"UTC","actor":"a","note":"n","at":"2027-03-15T12:00:00Z"}`, string(data))
	_, err = period.Decode("period.unknown", data)
	assert.ErrorIs(t, err, period.ErrUnknownEventType)
	_, err = period.Decode(period.TypeClosed, []byte(`{"period":"2026-13","at":"2027-03-15T12:00:00Z"}`))
	assert.ErrorIs(t, err, period.ErrInvalidPeriod)
}
