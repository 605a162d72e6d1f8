package period

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/golden"
)

// TestStoredEventsDecode keeps the periods stream readable: each file in
// testdata/stored decodes to the event it was written from and encodes back
// to the same bytes; its jsonb form (the events table's) decodes alike.
func TestStoredEventsDecode(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 30, 0, 123456789, time.UTC)
	nov := MustParse("2026-11")
	for _, s := range []struct {
		name string
		ev   Event
	}{
		{"period.closed", Closed{Period: nov, Zone: "Europe/Paris", Actor: "ops", Note: "books <checked> & signed", At: at}},
		{"period.reopened", Reopened{Period: nov, Actor: "ops", Reason: "late refund", At: at.Add(time.Hour)}},
	} {
		typ, data, err := Encode(s.ev)
		require.NoError(t, err)
		require.Equal(t, s.ev.Type(), typ)
		path := filepath.Join("testdata", "stored", s.name+".json")
		stored := golden.Stored(t, path, data)
		back, err := Decode(typ, stored)
		require.NoErrorf(t, err, "Decode(%s)", path)
		assert.Equalf(t, s.ev, back, "%s decodes to another event", path)
		assert.Equalf(t, string(stored), string(data), "%s: the encoding changed", path)
		path = filepath.Join("testdata", "jsonb", s.name+".json")
		back, err = Decode(typ, golden.Read(t, path))
		require.NoErrorf(t, err, "Decode(%s)", path)
		assert.Equalf(t, s.ev, back, "%s decodes to another event", path)
	}
}
