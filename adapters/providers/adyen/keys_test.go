package adyen_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/adyen"
	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/domain/delivery"
)

// testdata/settlement/unreferenced_batch_41.csv is a batch whose lines
// without references share the key of version 1
// (merchant|batch|type|psp|modification|currency): two Balancetransfer
// lines, two identical DepositCorrection lines, two fees.
func unreferencedBatch(t *testing.T) string {
	b, err := os.ReadFile("testdata/settlement/unreferenced_batch_41.csv")
	require.NoError(t, err)
	return string(b)
}

// Every line of a file gets a key of its own, and the first line of each
// version-1 key keeps it: a file imported under version 1 finds its
// recorded lines under the same keys.
func TestUnreferencedLinesGetKeysUniqueInTheFile(t *testing.T) {
	var keys []string
	err := adyen.ParseSettlement(strings.NewReader(unreferencedBatch(t)), report.Options{}, func(r report.Record) error {
		keys = append(keys, delivery.Settled(r.Line, r.Raw).DedupKey)
		return nil
	})
	require.NoError(t, err)
	require.Len(t, keys, 7)
	unique := map[string]bool{}
	for _, k := range keys {
		unique[k] = true
	}
	assert.Len(t, unique, 7, "%q", keys)
	assert.Equal(t, "settle:M|41|Settled|PSP1|MOD1|EUR", keys[0])
	assert.Equal(t, "settle:M|41|Balancetransfer|||EUR", keys[1], "version 1 kept")
	assert.Equal(t, "settle:M|41|DepositCorrection|||EUR", keys[3], "version 1 kept")
	assert.Equal(t, "settle:M|41|Fee||Transaction Fees November 2026|EUR", keys[5], "version 1 kept")
	assert.True(t, strings.HasPrefix(keys[4], "settle:M|41|DepositCorrection|||EUR|v2|"), keys[4])

	var again []string
	require.NoError(t, adyen.ParseSettlement(strings.NewReader(unreferencedBatch(t)), report.Options{}, func(r report.Record) error {
		again = append(again, delivery.Settled(r.Line, r.Raw).DedupKey)
		return nil
	}))
	assert.Equal(t, keys, again, "the same file, the same keys")
}
