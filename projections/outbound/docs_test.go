package outbound_test

import (
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/projections/outbound"
)

var update = flag.Bool("update", false, "rewrite docs/events.md's generated part")

const (
	docPath     = "../../docs/events.md"
	beginMarker = "<!-- begin generated types: go test ./projections/outbound -run TestDocs -update -->"
	endMarker   = "<!-- end generated types -->"
)

// docs/events.md shows every public type with exactly the example
// GET /v1/events/types serves.
func TestDocsShowEveryTypeWithItsExample(t *testing.T) {
	infos, err := outbound.Examples()
	require.NoError(t, err)
	var b strings.Builder
	b.WriteString(beginMarker + "\n")
	for _, info := range infos {
		ex, err := json.MarshalIndent(info.Example, "", "  ")
		require.NoError(t, err)
		b.WriteString("\n### `" + info.Type + "`\n\n" + info.Description + "\n\n```json\n" + string(ex) + "\n```\n")
	}
	b.WriteString("\n" + endMarker)
	raw, err := os.ReadFile(docPath)
	require.NoError(t, err)
	doc := string(raw)
	start, end := strings.Index(doc, beginMarker), strings.Index(doc, endMarker)
	require.True(t, start >= 0 && end > start, "docs/events.md lacks the generated section's markers")
	want := doc[:start] + b.String() + doc[end+len(endMarker):]
	if *update {
		require.NoError(t, os.WriteFile(docPath, []byte(want), 0o644))
		return
	}
	require.Equal(t, want, doc, "docs/events.md is stale: go test ./projections/outbound -run TestDocs -update")
}
