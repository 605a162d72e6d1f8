package providers_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/domain/delivery"
)

func TestPayloadHash(t *testing.T) {
	sum := sha256.Sum256([]byte(`{"a":1}`))
	if got := providers.PayloadHash([]byte(`{"a":1}`)); got != hex.EncodeToString(sum[:]) {
		t.Errorf("PayloadHash = %s", got)
	}
	// Known vector: SHA-256 of the empty string.
	if got := providers.PayloadHash(nil); got != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("PayloadHash(nil) = %s", got)
	}
	if providers.PayloadHash([]byte(`{"a":1}`)) == providers.PayloadHash([]byte(`{"a": 1}`)) {
		t.Error("PayloadHash must be over the exact bytes")
	}
}

func TestFallbackKey(t *testing.T) {
	same := []string{
		`{"b":2,"a":{"y":[1,2,{"z":null}],"x":"s"}}`,
		"{ \"a\" : { \"x\" : \"s\", \"y\" : [ 1 , 2 , { \"z\" : null } ] } ,\n\t\"b\" : 2 }",
		`{"a":{"y":[1,2,{"z":null}],"x":"\u0073"},"b":2}`,
	}
	k := providers.FallbackKey([]byte(same[0]))
	if !strings.HasPrefix(k, "fp:") || len(k) != 3+64 {
		t.Fatalf("FallbackKey = %q", k)
	}
	for _, s := range same[1:] {
		if got := providers.FallbackKey([]byte(s)); got != k {
			t.Errorf("FallbackKey(%s) = %s, want %s (order/whitespace must not matter)", s, got, k)
		}
	}
	different := []string{
		`{"b":2,"a":{"y":[2,1,{"z":null}],"x":"s"}}`, // array order matters
		`{"b":"2","a":{"y":[1,2,{"z":null}],"x":"s"}}`,
		`{"b":2}`,
	}
	for _, s := range different {
		if providers.FallbackKey([]byte(s)) == k {
			t.Errorf("FallbackKey(%s) collides with a different payload", s)
		}
	}
	// Amounts beyond float64 precision stay distinct.
	if providers.FallbackKey([]byte(`{"amount":12345678901234567890}`)) == providers.FallbackKey([]byte(`{"amount":12345678901234567891}`)) {
		t.Error("large numbers collapsed to the same key")
	}
	// Not JSON: hashed as is, still deterministic and prefixed.
	for _, raw := range []string{"txn_id=1&payment_status=Completed", `{"a":1} trailing`, "{\"a\":\"\xff\"}", ""} {
		got := providers.FallbackKey([]byte(raw))
		if got != "fp:"+providers.PayloadHash([]byte(raw)) {
			t.Errorf("FallbackKey(%q) = %s, want the raw hash", raw, got)
		}
	}
	if providers.FallbackKey([]byte("{\"a\":\"\xff\"}")) == providers.FallbackKey([]byte("{\"a\":\"\xfe\"}")) {
		t.Error("invalid UTF-8 payloads merged")
	}
}

func TestKeys(t *testing.T) {
	keys, err := providers.Keys([]string{" a ", "", "  ", "b"}, nil)
	if err != nil || len(keys) != 2 || string(keys[0]) != "a" || string(keys[1]) != "b" {
		t.Fatalf("Keys = %q, %v", keys, err)
	}
	var positions []int
	_, err = providers.Keys([]string{"", "ok", "bad"}, func(pos int, s string) ([]byte, error) {
		positions = append(positions, pos)
		if s == "bad" {
			return nil, errors.New("entry " + strconv.Itoa(pos))
		}
		return []byte(s), nil
	})
	if err == nil || err.Error() != "entry 3" || len(positions) != 2 || positions[0] != 2 {
		t.Fatalf("positions %v, err %v: blank entries must be skipped but counted", positions, err)
	}
}

func TestMatchAny(t *testing.T) {
	mac := func(k []byte) []byte { return append([]byte("mac:"), k...) }
	keys := [][]byte{[]byte("old"), []byte("new")}
	if !providers.MatchAny(keys, mac, []byte("garbage"), []byte("mac:new")) {
		t.Error("second key, second signature: no match")
	}
	if providers.MatchAny(keys, mac, []byte("mac:other")) || providers.MatchAny(keys, mac) || providers.MatchAny(nil, mac, []byte("mac:")) {
		t.Error("matched without a matching pair")
	}
}

func TestSingleValidates(t *testing.T) {
	if evs, err := providers.Single(delivery.Event{}, nil); err == nil || evs != nil {
		t.Errorf("invalid event passed: %v %v", evs, err)
	}
	want := errors.New("normalize failed")
	if _, err := providers.Single(delivery.Event{}, want); !errors.Is(err, want) {
		t.Errorf("err = %v", err)
	}
	if err := providers.Unauthorized("why"); !errors.Is(err, providers.ErrUnauthorized) || !strings.Contains(err.Error(), "why") {
		t.Errorf("Unauthorized = %v", err)
	}
}
