// Package params owns the parsing of the query-string (and form)
// parameters of the two read front ends, the /v1 API (adapters/httpapi)
// and the console (adapters/console): one parser, so that a currency, a
// time, a date bound, a page size or a choice from a list means the same
// on both, and a bad one is refused the same way (an error wrapping
// ErrBadParameter that names the parameter: 400 on both). It knows
// neither front end.
package params

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/onceledger/onceledger/domain/money"
)

// ErrBadParameter is wrapped by every error of a Params.
var ErrBadParameter = errors.New("bad parameter")

// maxText bounds a free-text parameter.
const maxText = 512

// Params reads parameters and keeps the first error, so that a handler
// reads all of them and checks once.
type Params struct {
	Values url.Values
	err    error
}

// New reads q.
func New(q url.Values) *Params { return &Params{Values: q} }

// Err is the first parameter's error, nil when all were good.
func (p *Params) Err() error { return p.err }

// Fail records an error (its message starts with the parameter's name)
// unless an earlier parameter failed already.
func (p *Params) Fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("%w: "+format, append([]any{ErrBadParameter}, args...)...)
	}
}

// SetErr records err as it is (already wrapping ErrBadParameter or
// another sentinel) unless an earlier parameter failed already.
func (p *Params) SetErr(err error) {
	if p.err == nil && err != nil {
		p.err = err
	}
}

// Get is a parameter taken as it is.
func (p *Params) Get(name string) string { return p.Values.Get(name) }

// Text is a free-text parameter (a search field): trimmed, UTF-8, at most
// 512 bytes.
func (p *Params) Text(name string) string {
	v := strings.TrimSpace(p.Values.Get(name))
	if len(v) > maxText || !utf8.ValidString(v) {
		p.Fail("%s: too long or not UTF-8", name)
		return ""
	}
	return v
}

// OneOf is an optional parameter that must be one of allowed.
func (p *Params) OneOf(name string, allowed ...string) string {
	v := p.Values.Get(name)
	if v != "" && !slices.Contains(allowed, v) {
		p.Fail("%s: must be one of %s, got %q", name, strings.Join(allowed, ", "), v)
	}
	return v
}

// Currency is an optional ISO 4217 code (any case), upper-cased.
func (p *Params) Currency(name string) string {
	v := p.Values.Get(name)
	if v == "" {
		return ""
	}
	c, err := money.ParseCurrency(v)
	if err != nil {
		p.Fail("%s: %w", name, err)
		return ""
	}
	return string(c)
}

// Time is an optional RFC 3339 timestamp. A '+' of the offset arrives as a
// space when the caller did not percent-encode it
// ("2026-01-02T10:00:00+01:00" in a raw query string); that one case is
// accepted as the '+' it was.
func (p *Params) Time(name string) time.Time {
	v := p.Values.Get(name)
	if v == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil && len(v) > 19 && strings.Count(v, " ") == 1 && strings.LastIndexByte(v, ' ') >= 19 {
		t, err = time.Parse(time.RFC3339Nano, strings.Replace(v, " ", "+", 1))
	}
	if err != nil {
		p.Fail("%s: want an RFC 3339 timestamp like 2026-01-02T15:04:05Z, got %q", name, v)
	}
	return t
}

// Day is an optional YYYY-MM-DD date (an <input type=date>) as midnight in
// zone (nil: UTC). An end date is inclusive, so its bound is the next
// midnight.
func (p *Params) Day(name string, zone *time.Location, end bool) time.Time {
	v := p.Values.Get(name)
	if v == "" {
		return time.Time{}
	}
	if zone == nil {
		zone = time.UTC
	}
	t, err := time.ParseInLocation(time.DateOnly, v, zone)
	if err != nil {
		p.Fail("%s: want a date like 2026-11-30, got %q", name, v)
		return time.Time{}
	}
	if end {
		t = t.AddDate(0, 0, 1)
	}
	return t
}

// Limit is the page size ?limit=, 1 to max (def when absent).
func (p *Params) Limit(def, max int) int {
	v := p.Values.Get("limit")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		p.Fail("limit: must be an integer from 1 to %d, got %q", max, v)
		return def
	}
	return n
}

// Range checks that a [from, to) bound pair is in order.
func (p *Params) Range(from, to time.Time) {
	if !from.IsZero() && !to.IsZero() && to.Before(from) {
		p.Fail("to: must not be before from")
	}
}

// DayOrTime is an RFC 3339 timestamp, or a date YYYY-MM-DD meaning its
// midnight in zone (what an accountant types).
func (p *Params) DayOrTime(name string, zone *time.Location) time.Time {
	v := p.Values.Get(name)
	if len(v) == len(time.DateOnly) {
		t, err := time.ParseInLocation(time.DateOnly, v, zone)
		if err != nil {
			p.Fail("%s: want a date YYYY-MM-DD or an RFC 3339 timestamp, got %q", name, v)
		}
		return t
	}
	return p.Time(name)
}
