package delivery_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/golden"
	"github.com/onceledger/onceledger/domain/delivery"
)

// stored is what the inbox gives back of ev: no payload hash, no raw bytes
// (columns of their own), no facts for an ignored delivery.
func stored(ev delivery.Event) delivery.Event {
	ev.PayloadHash, ev.Raw = "", nil
	if len(ev.Facts) == 0 {
		ev.Facts = nil
	}
	return ev
}

// TestStoredDeliveriesDecode keeps old inbox rows re-drivable: every file
// in testdata/normalized (the stored form of a delivery of each kind, as
// the code of its day wrote it) decodes to the delivery it was written
// from, with the same facts hash, and that delivery encodes to the same
// bytes again.
func TestStoredDeliveriesDecode(t *testing.T) {
	kinds := map[delivery.Kind]bool{}
	for _, s := range storedDeliveries() {
		require.NoErrorf(t, s.ev.Validate(), "%s", s.name)
		data, err := delivery.EncodeNormalized(s.ev)
		require.NoError(t, err)
		path := filepath.Join("testdata", "normalized", s.name+".json")
		b := golden.Stored(t, path, data)
		back, err := delivery.DecodeNormalized(b)
		require.NoErrorf(t, err, "decode %s", path)
		assert.Equalf(t, stored(s.ev), back, "%s decodes to another delivery", path)
		assert.Equalf(t, s.ev.FactsHash(), back.FactsHash(), "%s: facts hash", path)
		assert.Equalf(t, string(b), string(data), "%s: the stored form changed", path)
		for _, f := range s.ev.Facts {
			kinds[f.Kind] = true
		}
	}
	for _, k := range []delivery.Kind{delivery.KindAuthorized, delivery.KindCaptured, delivery.KindFailed, delivery.KindCanceled,
		delivery.KindRefunded, delivery.KindRefundFailed, delivery.KindDisputeOpened, delivery.KindDisputeInquiry,
		delivery.KindDisputeFundsReinstated, delivery.KindDisputeWon, delivery.KindDisputeLost, delivery.KindPayoutPaid,
		delivery.KindPayoutFailed, delivery.KindSettled, delivery.KindUnsettledCheck, delivery.KindPayoutLines,
		delivery.KindRefundCumulative, delivery.KindRefundAbnormal, delivery.KindRefundClosed} {
		assert.Truef(t, kinds[k], "fact kind %s has no golden file", k)
	}
}

// TestStoredDeliveriesDecodeFromJSONB: webhook_inbox.normalized is jsonb,
// which gives the object back reordered and spaced (testdata/jsonb); that
// form decodes alike.
func TestStoredDeliveriesDecodeFromJSONB(t *testing.T) {
	byName := map[string]delivery.Event{}
	for _, s := range storedDeliveries() {
		byName[s.name] = s.ev
	}
	files, err := filepath.Glob(filepath.Join("testdata", "jsonb", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, path := range files {
		ev, ok := byName[filepath.Base(path[:len(path)-len(".json")])]
		require.Truef(t, ok, "%s names no stored delivery", path)
		back, err := delivery.DecodeNormalized(golden.Read(t, path))
		require.NoErrorf(t, err, "decode %s", path)
		assert.Equalf(t, stored(ev), back, "%s decodes to another delivery", path)
	}
}

func TestDecodeNormalizedRefusesMalformed(t *testing.T) {
	_, err := delivery.DecodeNormalized([]byte(`{"facts": 3}`))
	require.ErrorContains(t, err, "decode normalized delivery")
}
