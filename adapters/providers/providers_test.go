package providers_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/domain/delivery"
)

func TestPayloadHash(t *testing.T) {
	sum := sha256.Sum256([]byte(`{"a":1}`))
	assert.Equal(t, hex.EncodeToString(sum[:]), providers.PayloadHash([]byte(`{"a":1}`)), "PayloadHash")
	// Known vector: SHA-256 of the empty string.
	assert.Equal(t, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", providers.PayloadHash(nil), "PayloadHash(nil)")
	assert.NotEqual(t, providers.PayloadHash([]byte(`{"a":1}`)), providers.PayloadHash([]byte(`{"a": 1}`)), "PayloadHash must be over the exact bytes")
}

func TestFallbackKey(t *testing.T) {
	same := []string{
		`{"b":2,"a":{"y":[1,2,{"z":null}],"x":"s"}}`,
		"{ \"a\" : { \"x\" : \"s\", \"y\" : [ 1 , 2 , { \"z\" : null } ] } ,\n\t\"b\" : 2 }",
		`{"a":{"y":[1,2,{"z":null}],"x":"\u0073"},"b":2}`,
	}
	k := providers.FallbackKey([]byte(same[0]))
	require.Truef(t, strings.HasPrefix(k, "fp:"), "FallbackKey = %q", k)
	require.Len(t, k, 3+64, "FallbackKey")
	for _, s := range same[1:] {
		assert.Equalf(t, k, providers.FallbackKey([]byte(s)), "FallbackKey(%s) (order/whitespace must not matter)", s)
	}
	different := []string{
		`{"b":2,"a":{"y":[2,1,{"z":null}],"x":"s"}}`, // array order matters
		`{"b":"2","a":{"y":[1,2,{"z":null}],"x":"s"}}`,
		`{"b":2}`,
	}
	for _, s := range different {
		assert.NotEqualf(t, k, providers.FallbackKey([]byte(s)), "FallbackKey(%s) collides with a different payload", s)
	}
	// Amounts beyond float64 precision stay distinct.
	assert.NotEqual(t, providers.FallbackKey([]byte(`{"amount":12345678901234567890}`)), providers.FallbackKey([]byte(`{"amount":12345678901234567891}`)),
		"large numbers collapsed to the same key")
	// Not JSON: hashed as is, still deterministic and prefixed.
	for _, raw := range []string{"txn_id=1&payment_status=Completed", `{"a":1} trailing`, "{\"a\":\"\xff\"}", ""} {
		assert.Equalf(t, "fp:"+providers.PayloadHash([]byte(raw)), providers.FallbackKey([]byte(raw)), "FallbackKey(%q), want the raw hash", raw)
	}
	assert.NotEqual(t, providers.FallbackKey([]byte("{\"a\":\"\xff\"}")), providers.FallbackKey([]byte("{\"a\":\"\xfe\"}")), "invalid UTF-8 payloads merged")
}

func TestKeys(t *testing.T) {
	keys, err := providers.Keys([]string{" a ", "", "  ", "b"}, nil)
	require.NoError(t, err, "Keys")
	require.Equal(t, [][]byte{[]byte("a"), []byte("b")}, keys, "Keys")
	var positions []int
	_, err = providers.Keys([]string{"", "ok", "bad"}, func(pos int, s string) ([]byte, error) {
		positions = append(positions, pos)
		if s == "bad" {
			return nil, errors.New("entry " + strconv.Itoa(pos))
		}
		return []byte(s), nil
	})
	require.EqualError(t, err, "entry 3", "blank entries must be skipped but counted")
	require.Lenf(t, positions, 2, "positions %v: blank entries must be skipped but counted", positions)
	require.Equalf(t, 2, positions[0], "positions %v: blank entries must be skipped but counted", positions)
}

func TestMatchAny(t *testing.T) {
	mac := func(k []byte) []byte { return append([]byte("mac:"), k...) }
	keys := [][]byte{[]byte("old"), []byte("new")}
	assert.True(t, providers.MatchAny(keys, mac, []byte("garbage"), []byte("mac:new")), "second key, second signature: no match")
	assert.False(t, providers.MatchAny(keys, mac, []byte("mac:other")), "matched without a matching pair")
	assert.False(t, providers.MatchAny(keys, mac), "matched without a matching pair")
	assert.False(t, providers.MatchAny(nil, mac, []byte("mac:")), "matched without a matching pair")
}

func TestSingleValidates(t *testing.T) {
	evs, err := providers.Single(delivery.Event{}, nil)
	assert.Error(t, err, "invalid event passed")
	assert.Nil(t, evs, "invalid event passed")
	want := errors.New("normalize failed")
	_, err = providers.Single(delivery.Event{}, want)
	assert.ErrorIs(t, err, want)
	err = providers.Unauthorized("why")
	if assert.ErrorIs(t, err, providers.ErrUnauthorized, "Unauthorized") {
		assert.ErrorContains(t, err, "why", "Unauthorized")
	}
}
