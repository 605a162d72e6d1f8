// Package period is accounting periods: calendar months in the reporting
// time zone (Period), the calendar aggregate of the "periods" stream that
// closes and reopens them (Calendar: fold and decide, events Closed and
// Reopened with their codec), the booking rule that sends a late fact into
// the first open period as an adjustment, and the trial balance of a period
// with its content hash. Pure: the clock and the time zone are passed in.
package period

import (
	"errors"
	"fmt"
	"time"
)

// Period is one calendar month (YYYY-MM) of the reporting time zone. The
// zero Period is "none". Periods are comparable values.
type Period struct {
	year  int
	month time.Month
}

// ErrInvalidPeriod is wrapped by Parse and New for anything but a YYYY-MM
// month of years 1..9999.
var ErrInvalidPeriod = errors.New("invalid period: want YYYY-MM")

// New returns the period of year and month.
func New(year int, month time.Month) (Period, error) {
	if year < 1 || year > 9999 || month < time.January || month > time.December {
		return Period{}, fmt.Errorf("%w: %04d-%02d", ErrInvalidPeriod, year, int(month))
	}
	return Period{year: year, month: month}, nil
}

// MustParse is Parse for constants; it panics on a bad period.
func MustParse(s string) Period {
	p, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return p
}

// Parse accepts exactly "YYYY-MM" (four digits, a dash, two digits).
func Parse(s string) (Period, error) {
	if len(s) != 7 || s[4] != '-' {
		return Period{}, fmt.Errorf("%w: %q", ErrInvalidPeriod, s)
	}
	y, m := 0, 0
	for i, c := range []byte(s) {
		switch {
		case i == 4:
			continue
		case c < '0' || c > '9':
			return Period{}, fmt.Errorf("%w: %q", ErrInvalidPeriod, s)
		case i < 4:
			y = y*10 + int(c-'0')
		default:
			m = m*10 + int(c-'0')
		}
	}
	p, err := New(y, time.Month(m))
	if err != nil {
		return Period{}, fmt.Errorf("%w: %q", ErrInvalidPeriod, s)
	}
	return p, nil
}

// Of is the period of the instant t in the time zone loc: a payment at
// 2026-12-01T02:00Z is in 2026-11 in America/Los_Angeles and in 2026-12 in
// Pacific/Auckland.
func Of(t time.Time, loc *time.Location) Period {
	y, m, _ := t.In(loc).Date()
	return Period{year: y, month: m}
}

func (p Period) Year() int            { return p.year }
func (p Period) Month() time.Month    { return p.month }
func (p Period) IsZero() bool         { return p.year == 0 }
func (p Period) Before(q Period) bool { return p.Compare(q) < 0 }
func (p Period) After(q Period) bool  { return p.Compare(q) > 0 }

// Compare returns -1, 0 or +1 as p is before, equal to or after q.
func (p Period) Compare(q Period) int {
	a, b := p.index(), q.index()
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (p Period) index() int { return p.year*12 + int(p.month) - 1 }

func fromIndex(i int) Period { return Period{year: i / 12, month: time.Month(i%12 + 1)} }

// Next is the following month.
func (p Period) Next() Period { return fromIndex(p.index() + 1) }

// Prev is the preceding month.
func (p Period) Prev() Period { return fromIndex(p.index() - 1) }

// Start is the first instant of p in loc (midnight of its first day).
func (p Period) Start(loc *time.Location) time.Time {
	return time.Date(p.year, p.month, 1, 0, 0, 0, 0, loc)
}

// End is the first instant after p in loc: p covers [Start, End).
func (p Period) End(loc *time.Location) time.Time { return p.Next().Start(loc) }

// String is "YYYY-MM"; the zero Period is "".
func (p Period) String() string {
	if p.IsZero() {
		return ""
	}
	return fmt.Sprintf("%04d-%02d", p.year, int(p.month))
}

// MarshalText renders "YYYY-MM" (JSON: a string; the zero Period is "").
func (p Period) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText parses "YYYY-MM"; "" is the zero Period.
func (p *Period) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*p = Period{}
		return nil
	}
	q, err := Parse(string(b))
	if err != nil {
		return err
	}
	*p = q
	return nil
}
