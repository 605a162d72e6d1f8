package paypal

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
)

// A capture names its order (supplementary_data.related_ids.order_id):
// the console's search finds the payment by it.
func TestCaptureNamesItsOrder(t *testing.T) {
	s := testSigners(t)
	a := adapter(t, s[0].certPEM)
	body := providertest.Fixture(t, "capture_denied.json")
	now := time.Now()
	evs, err := a.Parse(providers.Request{Header: signed(t, s[0], body, now), Body: body, Now: now})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, []string{"8PR65097T8571330M"}, evs[0].References)
}
