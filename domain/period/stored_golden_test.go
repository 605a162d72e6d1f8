package period

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeMissing writes the golden file of a stored event that has none yet.
// It never rewrites one: the files are what the encoding of their day
// stored, and the periods stream holds events in those bytes for good.
var writeMissing = flag.Bool("write-missing-golden", false, "write testdata/stored files that do not exist yet")

// TestStoredEventsDecode keeps the periods stream readable: each file in
// testdata/stored decodes to the event it was written from and encodes back
// to the same bytes; its jsonb form (the events table's, reordered and
// spaced; made with psql: SELECT '<json>'::jsonb::text) decodes alike.
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
		if *writeMissing {
			if _, err := os.Stat(path); os.IsNotExist(err) {
				require.NoError(t, os.WriteFile(path, append(data, '\n'), 0o644))
			}
		}
		stored, err := os.ReadFile(path)
		require.NoErrorf(t, err, "%s: no golden file (run with -write-missing-golden for a new one)", s.name)
		stored = bytes.TrimSuffix(stored, []byte("\n"))
		back, err := Decode(typ, stored)
		require.NoErrorf(t, err, "Decode(%s)", path)
		assert.Equalf(t, s.ev, back, "%s decodes to another event", path)
		assert.Equalf(t, string(stored), string(data), "%s: the encoding changed", path)
		jsonb, err := os.ReadFile(filepath.Join("testdata", "jsonb", s.name+".json"))
		require.NoErrorf(t, err, "%s: no jsonb form", s.name)
		back, err = Decode(typ, bytes.TrimSuffix(jsonb, []byte("\n")))
		require.NoErrorf(t, err, "Decode(jsonb %s)", s.name)
		assert.Equalf(t, s.ev, back, "jsonb %s decodes to another event", s.name)
	}
}
