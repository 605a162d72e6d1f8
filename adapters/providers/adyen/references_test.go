package adyen

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
)

// Each item names the merchant's reference (merchantReference): the
// console's search finds the payment by it.
func TestItemsNameTheMerchantReference(t *testing.T) {
	evs, err := parse(mustNew(t, testKey), providertest.Fixture(t, "failures.json"))
	require.NoError(t, err)
	require.NotEmpty(t, evs)
	assert.Equal(t, []string{"order-1002"}, evs[0].References)
}
