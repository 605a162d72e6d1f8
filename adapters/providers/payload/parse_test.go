package payload_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/payload"
	"github.com/onceledger/onceledger/domain/delivery"
)

// oracleDecode is how DecodeObject read a body before its own parser:
// encoding/json with UseNumber, nothing after the value, an object, and no
// key repeated (UniqueKeys). The parser must agree with it on every input.
func oracleDecode(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the value")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not an object")
	}
	if err := payload.UniqueKeys(raw, payload.KeyRule{}); err != nil {
		return nil, err
	}
	return m, nil
}

var decodeSeeds = []string{
	`{}`, `{"a":1}`, `{"a":-0.5e+10,"b":[true,false,null,"x"],"c":{"d":[]}}`,
	`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"a":1,"A":2}`, `{"s":"\ud83d\ude00 \ud800 \"q\" \/ \t"}`,
	"{\"a\xff\":1,\"a\xfe\":2}", "{\"k\":\"\xe2\x82\xac\xc3\"}", `{"a":`, `{"a":1}}`, `{"a":1} {}`,
	`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":-}`, `{"a":tru}`, `{"a":"` + "\x01" + `"}`,
	`{"a":"\x"}`, `{"a":"\u12"}`, `[1]`, `"x"`, `7`, ``, ` `, `{,}`, `{"a":1,}`, `[1,]`, `{"a" 1}`,
	` {"a" : [ 1 , 2 ] } `, `{"l":[{"a":1},{"a":1,"b":[{"c":1,"c":2}]}]}`, `{"a":{"b":1,"b":2},"x":`,
	`{"":1,"":2}`, `{"n":12345678901234567890123}`,
}

// TestDecodeObjectAgreesWithEncodingJSON runs the seeds of the fuzz target
// below as a test: same value, same acceptance as the decoder it replaced.
func TestDecodeObjectAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range decodeSeeds {
		checkAgainstOracle(t, []byte(s))
	}
}

// FuzzDecodeObject: DecodeObject accepts exactly what the oracle accepts,
// decodes it to the same value, and calls a repeated key in valid JSON a
// duplicate (go test -fuzz FuzzDecodeObject ./adapters/providers/payload).
func FuzzDecodeObject(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkAgainstOracle)
}

func checkAgainstOracle(t *testing.T, raw []byte) {
	want, wantErr := oracleDecode(raw)
	got, err := payload.DecodeObject(raw)
	if wantErr != nil {
		require.Errorf(t, err, "accepted %q, which the oracle refuses (%v)", raw, wantErr)
		require.ErrorIsf(t, err, delivery.ErrMalformed, "%q", raw)
		if errors.Is(wantErr, payload.ErrDuplicateKey) {
			require.ErrorIsf(t, err, payload.ErrDuplicateKey, "%q", raw)
			require.Equalf(t, wantErr.Error(), err.Error(), "%q: the duplicate's path", raw)
		} else {
			require.NotErrorIsf(t, err, payload.ErrDuplicateKey, "%q: invalid JSON is not a duplicate", raw)
		}
		return
	}
	require.NoErrorf(t, err, "refused %q, which the oracle accepts", raw)
	require.Equalf(t, want, payload.ObjectMap(got), "%q", raw)
}

// Nesting is bounded as encoding/json bounds it: 10,000 levels decode,
// deeper is malformed (the parser recurses per level).
func TestDecodeObjectDepth(t *testing.T) {
	nest := func(depth int) []byte {
		return []byte(strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth))
	}
	_, err := payload.DecodeObject(nest(10000))
	require.NoError(t, err)
	_, err = payload.DecodeObject(nest(10001))
	require.ErrorIs(t, err, delivery.ErrMalformed)
	assert.ErrorContains(t, err, "max depth")
	_, err = payload.DecodeObject([]byte(`{"a":` + strings.Repeat("[", 200000)))
	require.ErrorIs(t, err, delivery.ErrMalformed)
}
