// Package providertest holds what the provider adapters' tests share:
// reading and editing fixtures, tampering with bodies, and checking
// normalized events and errors against what a test expects.
package providertest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

// Fixture returns testdata/name of the package under test.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Edit returns fixture name with the first old replaced by new. It fails if
// old is not there, so that a case cannot silently test the unedited body.
func Edit(t testing.TB, name, old, new string) []byte {
	t.Helper()
	b := string(Fixture(t, name))
	if !strings.Contains(b, old) {
		t.Fatalf("%s lacks %q", name, old)
	}
	return []byte(strings.Replace(b, old, new, 1))
}

// Tampered returns a copy of body with the byte at (at modulo its length)
// XORed with mask (non-zero), or []byte{mask} for an empty body: a body that
// differs from body, for checking that a signature does not carry over.
func Tampered(body []byte, at int, mask byte) []byte {
	if len(body) == 0 {
		return []byte{mask}
	}
	b := append([]byte(nil), body...)
	b[at%len(b)] ^= mask
	return b
}

// ClientError reports whether err wraps a sentinel the HTTP layer answers
// with 400.
func ClientError(err error) bool {
	for _, s := range []error{delivery.ErrMalformed, delivery.ErrMissingField, delivery.ErrInvalidAmount, money.ErrUnknownCurrency} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// Documented reports whether err wraps a sentinel the HTTP layer maps to 401
// or 400; anything else would surface as a 500.
func Documented(err error) bool {
	return errors.Is(err, providers.ErrUnauthorized) || ClientError(err)
}

// CheckFieldError fails the test unless a signed body was refused with an
// error wrapping target (and not ErrUnauthorized) that names field, and no
// events came with it. label prefixes the messages.
func CheckFieldError(t testing.TB, label string, evs []delivery.Event, err, target error, field string) {
	t.Helper()
	if !errors.Is(err, target) || errors.Is(err, providers.ErrUnauthorized) {
		t.Errorf("%s: err %v, want %v", label, err, target)
		return
	}
	if !strings.Contains(err.Error(), field) {
		t.Errorf("%s: error %q does not name %s", label, err, field)
	}
	if evs != nil {
		t.Errorf("%s: events returned with an error", label)
	}
}

// Want is what a test expects of one normalized event. Type, OccurredAt and
// Raw are compared only when set.
type Want struct {
	Provider, DedupKey, Type, PaymentKey string
	OccurredAt                           time.Time
	Raw                                  []byte // the bytes the event must keep
	Facts                                []delivery.Fact
}

// CheckEvent compares ev with w. Whatever w says, the event must validate,
// have a non-zero OccurredAt in UTC, and carry the hash of its own Raw.
// label prefixes the messages.
func CheckEvent(t testing.TB, label string, ev delivery.Event, w Want) {
	t.Helper()
	if err := ev.Validate(); err != nil {
		t.Errorf("%s: invalid: %v", label, err)
	}
	if ev.Provider != w.Provider || ev.DedupKey != w.DedupKey || ev.PaymentKey != w.PaymentKey || (w.Type != "" && ev.Type != w.Type) {
		t.Errorf("%s: provider %q dedup %q type %q key %q; want %q %q %q %q",
			label, ev.Provider, ev.DedupKey, ev.Type, ev.PaymentKey, w.Provider, w.DedupKey, w.Type, w.PaymentKey)
	}
	if ev.OccurredAt.IsZero() || ev.OccurredAt.Location() != time.UTC || (!w.OccurredAt.IsZero() && !ev.OccurredAt.Equal(w.OccurredAt)) {
		t.Errorf("%s: OccurredAt %v, want %v in UTC", label, ev.OccurredAt, w.OccurredAt)
	}
	if ev.PayloadHash != providers.PayloadHash(ev.Raw) || (w.Raw != nil && string(ev.Raw) != string(w.Raw)) {
		t.Errorf("%s: Raw/PayloadHash are not those of the delivery", label)
	}
	if len(ev.Facts) != len(w.Facts) {
		t.Errorf("%s: facts %+v, want %+v", label, ev.Facts, w.Facts)
		return
	}
	for i := range w.Facts {
		if ev.Facts[i] != w.Facts[i] {
			t.Errorf("%s: fact %d %+v, want %+v", label, i, ev.Facts[i], w.Facts[i])
		}
	}
}

// ParseOne parses r with a and returns its one event, failing the test on an
// error or another number of events.
func ParseOne(t testing.TB, a providers.Adapter, r providers.Request) delivery.Event {
	t.Helper()
	evs, err := a.Parse(r)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(evs) != 1 {
		t.Fatalf("Parse returned %d events, want 1", len(evs))
	}
	return evs[0]
}
