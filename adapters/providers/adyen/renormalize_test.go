package adyen

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A stored item, re-normalized, is the event it was when it arrived.
func TestRenormalizeIsParseWithoutTheSignature(t *testing.T) {
	a := mustNew(t, testKey)
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	n := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		body, err := SignBatch(testKey, raw)
		require.NoError(t, err)
		evs, err := parse(a, body)
		if err != nil {
			continue // fixtures of refusals
		}
		n += len(evs)
		for _, ev := range evs {
			again, err := a.Renormalize(ev.DedupKey, ev.Raw)
			require.NoError(t, err, f)
			assert.Equal(t, ev, again, f)
		}
	}
	assert.Positive(t, n)
}
