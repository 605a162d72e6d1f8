package payload_test

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/payload"
	"github.com/onceledger/onceledger/domain/delivery"
)

var (
	exact    = payload.KeyRule{}
	fold     = payload.KeyRule{Fold: true}
	freeRule = payload.KeyRule{Fold: true, ExactUnder: []string{"free"}}
)

func TestUniqueKeys(t *testing.T) {
	cases := []struct {
		name, raw string
		rule      payload.KeyRule
		dup       string // the path the error must name; "" = no error
	}{
		{"flat", `{"a":1,"b":2}`, exact, ""},
		{"repeat at the root", `{"amount":1,"amount":2}`, exact, "amount"},
		{"repeat with equal values", `{"a":1,"a":1}`, exact, "a"},
		{"escaped spelling", `{"amount":1,"\u0061mount":2}`, exact, "amount"},
		{"escaped slash", `{"a/b":1,"a\/b":2}`, exact, "a/b"},
		{"nested", `{"data":{"object":{"id":"x","id":"y"}}}`, exact, "data.object.id"},
		{"in a list", `{"l":[{"a":1},{"a":1,"b":[{"c":1,"c":2}]}]}`, exact, "l[1].b[0].c"},
		{"nested lists", `{"l":[[],[{"x":1}],[1,{"y":1,"y":1}]]}`, exact, "l[2][1].y"},
		{"top-level list", `[{"a":1},{"a":1,"a":2}]`, exact, "[1].a"},
		{"same key in sibling objects", `{"a":{"id":1},"b":{"id":1},"l":[{"id":1},{"id":2}]}`, exact, ""},
		{"same key at two depths", `{"id":1,"o":{"id":2,"o":{"id":3}}}`, exact, ""},
		{"repeat after a nested object closes", `{"a":{"b":1},"c":[1,2],"a":3}`, exact, "a"},
		{"empty key twice", `{"":1,"":2}`, exact, `""`},
		{"case differs, exact", `{"orderId":1,"orderid":2,"ORDERID":3}`, exact, ""},
		{"case differs, folded", `{"status":"a","Status":"b"}`, fold, "Status"},
		{"Kelvin sign folds to k", "{\"k\":1,\"\u212a\":2}", fold, "\u212a"},
		{"long s folds to S", "{\"S\":1,\"\u017f\":2}", fold, "\u017f"},
		{"no folding under ExactUnder", `{"free":{"a":1,"A":2,"n":{"b":1,"B":1}},"typed":{"b":1}}`, freeRule, ""},
		{"folding elsewhere", `{"free":{"a":1},"typed":{"b":1,"B":2}}`, freeRule, "typed.B"},
		{"ExactUnder names members, not list entries", `{"l":[{"free":1,"FREE":2}]}`, freeRule, "l[0].FREE"},
		{"exact under ExactUnder still", `{"x":[{"free":{"a":1,"a":2}}]}`, freeRule, "x[0].free.a"},
		{"scalar", `7`, exact, ""},
		{"empty object", `{}`, exact, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := payload.UniqueKeys([]byte(c.raw), c.rule)
			if c.dup == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, payload.ErrDuplicateKey)
			require.ErrorIs(t, err, delivery.ErrMalformed)
			assert.ErrorContains(t, err, c.dup, "the error names the duplicate")
		})
	}
	err := payload.UniqueKeys([]byte(`{"a":`), exact)
	assert.ErrorIs(t, err, delivery.ErrMalformed, "invalid JSON")
	assert.NotErrorIs(t, err, payload.ErrDuplicateKey, "invalid JSON")
}

// Paths are rebuilt only for an error, so deep nesting stays linear: with a
// path kept per level this took minutes. Linearity is asserted on bytes
// allocated, not on time: doubling the depth may at most about double them
// (a path per level would quadruple them), on a loaded machine as on a quiet one.
func TestUniqueKeysDeepNesting(t *testing.T) {
	small, large := deepNestingAllocs(t, 25000), deepNestingAllocs(t, 50000)
	assert.LessOrEqual(t, float64(large), 2.5*float64(small),
		"bytes allocated for depth 50,000 (%d) against 25,000 (%d): not linear", large, small)
}

// deepNestingAllocs checks a valid and a duplicate document nested depth
// levels and returns the bytes allocated doing it.
func deepNestingAllocs(t *testing.T, depth int) uint64 {
	deep := strings.Repeat(`{"a":[`, depth) + "1" + strings.Repeat("]}", depth)
	dup := strings.Repeat(`{"a":`, depth) + `{"b":1,"b":2}` + strings.Repeat("}", depth)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	require.NoError(t, payload.UniqueKeys([]byte(deep), freeRule))
	err := payload.UniqueKeys([]byte(dup), exact)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, payload.ErrDuplicateKey, "deep duplicate")
	require.Truef(t, strings.HasSuffix(err.Error(), strings.Repeat("a.", depth)+"b"), "deep duplicate: %.80v", err)
	return after.TotalAlloc - before.TotalAlloc
}

// The readers refuse duplicates: DecodeObject exactly (its lookups are case
// sensitive), DecodeBody and DecodeMember also ignoring case (struct fields
// match either spelling, last one winning).
func TestDecodersRefuseDuplicateKeys(t *testing.T) {
	_, err := payload.DecodeObject([]byte(`{"data":{"amount":1,"amount":2}}`))
	if assert.ErrorIs(t, err, payload.ErrDuplicateKey, "DecodeObject") {
		assert.ErrorContains(t, err, "data.amount", "DecodeObject")
	}
	_, err = payload.DecodeObject([]byte(`{"data":{"amount":1,"Amount":2}}`))
	assert.NoError(t, err, "DecodeObject refuses case-distinct keys")
	var v struct {
		Resource json.RawMessage `json:"resource"`
		Amount   int             `json:"amount"`
	}
	for raw, path := range map[string]string{
		`{"amount":1,"amount":2}`:                         "amount",
		`{"amount":1,"AMOUNT":2}`:                         "AMOUNT",
		`{"resource":{"id":"a","id":"b"}}`:                "resource.id",
		`{"resource":{"links":[{"rel":"up","Rel":"x"}]}}`: "resource.links[0].Rel",
	} {
		err := payload.DecodeBody([]byte(raw), &v)
		if assert.ErrorIsf(t, err, payload.ErrDuplicateKey, "DecodeBody(%s)", raw) {
			assert.ErrorContainsf(t, err, path, "DecodeBody(%s)", raw)
		}
	}
	var m struct{ ID string }
	err = payload.DecodeMember([]byte(`{"id":"a","ID":"b"}`), &m, "notification")
	if assert.ErrorIs(t, err, payload.ErrDuplicateKey, "DecodeMember") {
		assert.ErrorContains(t, err, "notification.ID", "DecodeMember")
	}
	assert.NoError(t, payload.DecodeBody([]byte(`{"amount":1,"resource":{"Amount":2}}`), &v), "DecodeBody, same name in different objects")
}

// FuzzUniqueKeys checks UniqueKeys against an independent oracle: a JSON
// value has a repeated key exactly when decoding it into maps loses members,
// i.e. when the members counted in the text (one ':' outside strings each)
// outnumber the keys of the decoded maps. With folding, the oracle compares
// each object's keys pairwise with strings.EqualFold.
func FuzzUniqueKeys(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"a":2}`, `{"a":{"b":[{"c":1,"c":2}]}}`, `{"a":1,"\u0061":2}`, `{"a":1,"A":2}`,
		`[{"x":1},{"x":1}]`, `{"k":1,"` + "\u212a" + `":1}`, `{"":1,"":2}`, `{"a":"x:y","b":"\":"}`,
		"{\"a\xff\":1,\"a\xfe\":2}", `{"a":`, `1`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		errExact := payload.UniqueKeys(raw, exact)
		errFold := payload.UniqueKeys(raw, fold)
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil || dec.More() {
			if !json.Valid(raw) {
				require.Errorf(t, errExact, "invalid JSON accepted: %q", raw)
				require.Errorf(t, errFold, "invalid JSON accepted: %q", raw)
			}
			return
		}
		if !json.Valid(raw) {
			return // a value followed by more: not ours to judge here
		}
		wantExact := countMembers(raw) != countKeys(v)
		checkDuplicate(t, "exact", errExact, wantExact, raw)
		checkDuplicate(t, "fold", errFold, wantExact || foldCollides(v), raw)
	})
}

// countMembers counts object members in valid JSON text: each has one ':'
// outside string literals, and nothing else has one.
func countMembers(raw []byte) int {
	n, inString, escaped := 0, false, false
	for _, c := range raw {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && c == ':':
			n++
		}
	}
	return n
}

func countKeys(v any) int {
	n := 0
	switch x := v.(type) {
	case map[string]any:
		n += len(x)
		for _, e := range x {
			n += countKeys(e)
		}
	case []any:
		for _, e := range x {
			n += countKeys(e)
		}
	}
	return n
}

func foldCollides(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k, e := range x {
			for _, o := range keys {
				if strings.EqualFold(k, o) {
					return true
				}
			}
			keys = append(keys, k)
			if foldCollides(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if foldCollides(e) {
				return true
			}
		}
	}
	return false
}

// checkDuplicate fails the test unless err is a duplicate key error when
// want, and nil otherwise.
func checkDuplicate(t *testing.T, rule string, err error, want bool, raw []byte) {
	t.Helper()
	if want {
		require.ErrorIsf(t, err, payload.ErrDuplicateKey, "%s: want a duplicate, for %q", rule, raw)
	} else {
		require.NoErrorf(t, err, "%s: want no duplicate, for %q", rule, raw)
	}
}
