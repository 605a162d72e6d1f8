package standard_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/standard"
)

// A stored delivery, re-normalized with its row's dedup key, is the event
// it was when it arrived.
func TestRenormalizeIsParseWithoutTheSignature(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	a, err := standard.New([]string{secret}, 5*time.Minute)
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		h, err := standard.Sign(secret, "msg_"+filepath.Base(f), time.Now(), raw)
		require.NoError(t, err)
		evs, err := a.Parse(providers.Request{Header: h, Body: raw})
		require.NoError(t, err, f)
		again, err := a.Renormalize(evs[0].DedupKey, evs[0].Raw)
		require.NoError(t, err, f)
		assert.Equal(t, evs[0], again, f)
	}
}
