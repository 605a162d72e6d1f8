// Package providertest holds what the provider adapters' tests share:
// reading and editing fixtures, tampering with bodies, building adapters,
// checking normalized events, refusals and errors against what a test
// expects (with testify, as every suite does), and summing the balances a
// history posts.
package providertest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
)

// Fixture returns testdata/name of the package under test.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

// Edit returns fixture name with the first old replaced by new. It fails if
// old is not there, so that a case cannot silently test the unedited body.
func Edit(t testing.TB, name, old, new string) []byte {
	t.Helper()
	b := string(Fixture(t, name))
	require.Containsf(t, b, old, "%s lacks %q", name, old)
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
	if !assert.ErrorIs(t, err, target, label) || !assert.NotErrorIs(t, err, providers.ErrUnauthorized, label) {
		return
	}
	assert.ErrorContainsf(t, err, field, "%s: the error does not name %s", label, field)
	assert.Nilf(t, evs, "%s: events returned with an error", label)
}

// CheckUnauthorized fails the test unless a delivery was refused with an
// error wrapping ErrUnauthorized and no events came with it; it reports
// whether both hold. label prefixes the messages.
func CheckUnauthorized(t testing.TB, label string, evs []delivery.Event, err error) bool {
	t.Helper()
	refused := assert.ErrorIs(t, err, providers.ErrUnauthorized, label)
	return assert.Nilf(t, evs, "%s: events returned with an error", label) && refused
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
	assert.NoErrorf(t, ev.Validate(), "%s: invalid", label)
	assert.Equalf(t, w.Provider, ev.Provider, "%s: provider", label)
	assert.Equalf(t, w.DedupKey, ev.DedupKey, "%s: dedup key", label)
	assert.Equalf(t, w.PaymentKey, ev.PaymentKey, "%s: payment key", label)
	if w.Type != "" {
		assert.Equalf(t, w.Type, ev.Type, "%s: type", label)
	}
	assert.Falsef(t, ev.OccurredAt.IsZero(), "%s: OccurredAt is zero", label)
	assert.Samef(t, time.UTC, ev.OccurredAt.Location(), "%s: OccurredAt %v is not in UTC", label, ev.OccurredAt)
	if !w.OccurredAt.IsZero() {
		assert.Truef(t, ev.OccurredAt.Equal(w.OccurredAt), "%s: OccurredAt %v, want %v", label, ev.OccurredAt, w.OccurredAt)
	}
	assert.Equalf(t, providers.PayloadHash(ev.Raw), ev.PayloadHash, "%s: PayloadHash is not that of Raw", label)
	if w.Raw != nil {
		assert.Equalf(t, string(w.Raw), string(ev.Raw), "%s: Raw is not the delivery", label)
	}
	if !assert.Lenf(t, ev.Facts, len(w.Facts), "%s: facts %+v, want %+v", label, ev.Facts, w.Facts) {
		return
	}
	for i := range w.Facts {
		assert.Equalf(t, w.Facts[i], ev.Facts[i], "%s: fact %d", label, i)
	}
}

// ParseOne parses r with a and returns its one event, failing the test on an
// error or another number of events.
func ParseOne(t testing.TB, a providers.Adapter, r providers.Request) delivery.Event {
	t.Helper()
	evs, err := a.Parse(r)
	require.NoError(t, err, "Parse")
	require.Len(t, evs, 1, "Parse")
	return evs[0]
}

// RequireBound stops the test unless ev came from provider and carries body,
// byte for byte, and its hash: an event is bound to the verified delivery.
func RequireBound(t testing.TB, ev delivery.Event, provider string, body []byte) {
	t.Helper()
	require.Equalf(t, provider, ev.Provider, "event not bound to the verified delivery: %+v", ev)
	require.Equalf(t, providers.PayloadHash(body), ev.PayloadHash, "event not bound to the verified delivery: %+v", ev)
	require.Equalf(t, body, ev.Raw, "event not bound to the verified delivery: %+v", ev)
}

// Adapter returns what newAdapter makes of keys, stopping the test on an
// error: each provider's tests build their adapter through it.
func Adapter[K, A any](t testing.TB, newAdapter func(K) (A, error), keys K) A {
	t.Helper()
	a, err := newAdapter(keys)
	require.NoError(t, err)
	return a
}

// Balances sums the postings of history per account, leaving out the
// accounts that net to zero (an account that netted out is the same as none).
func Balances(history []payment.Event) map[string]int64 {
	b := map[string]int64{}
	for _, e := range history {
		for _, p := range payment.Postings(e) {
			b[p.Account] += p.Amount
		}
	}
	for k, v := range b {
		if v == 0 {
			delete(b, k)
		}
	}
	return b
}

// CheckRefusal parses req with a, in a subtest called name, and checks that
// it is refused with ErrUnauthorized saying reason, and no events.
func CheckRefusal(t *testing.T, a providers.Adapter, name string, req providers.Request, reason string) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		evs, err := a.Parse(req)
		require.ErrorIs(t, err, providers.ErrUnauthorized)
		assert.ErrorContains(t, err, reason)
		assert.Nil(t, evs, "events returned with an error")
	})
}
