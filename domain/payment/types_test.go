package payment

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// EventTypes is complete: every event the codec round-trips is in it, and
// every listed type has a stored golden file that decodes.
func TestEventTypesIsTheList(t *testing.T) {
	list := EventTypes()
	seen := map[string]bool{}
	for _, typ := range list {
		require.Falsef(t, seen[typ], "%s listed twice", typ)
		seen[typ] = true
		data, err := os.ReadFile(filepath.Join("testdata", "stored", typ+".json"))
		require.NoErrorf(t, err, "%s has no golden file", typ)
		_, err = Decode(typ, data)
		assert.NoErrorf(t, err, "%s", typ)
	}
	for _, e := range allEvents() {
		assert.Truef(t, slices.Contains(list, e.Type()), "%s (%T) is not in EventTypes", e.Type(), e)
	}
}
