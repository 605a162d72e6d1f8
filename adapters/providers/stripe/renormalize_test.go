package stripe_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
)

// A stored event, re-normalized, is the event it was when it arrived.
func TestRenormalizeIsParseWithoutTheSignature(t *testing.T) {
	const secret = "whsec_renormalize"
	a, err := stripe.New([]string{secret}, 5*time.Minute)
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	n := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		h := http.Header{}
		h.Set("Stripe-Signature", stripe.Sign(secret, time.Now(), raw))
		evs, err := a.Parse(providers.Request{Header: h, Body: raw})
		if err != nil {
			continue // fixtures of refusals
		}
		n++
		again, err := a.Renormalize(evs[0].DedupKey, evs[0].Raw)
		require.NoError(t, err, f)
		assert.Equal(t, evs[0], again, f)
	}
	assert.Positive(t, n)
}
