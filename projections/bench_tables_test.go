package projections_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/projections"
)

// TestBenchEmptiesEveryReadModelTable: the rebuild bench's "into empty
// tables" figure (bench/run.sh, rb_empty) is a rebuild into empty tables
// only when every table of every projection is emptied; one left with rows
// makes the rebuild take the checksum pass and the paused live-path
// alignment, and the figure measures those instead. Two sessions running,
// a table added by a new read model was missing from that list (session
// 9's day_facts and batch_links: 0.05 of the raw read instead of the
// rebuild's own figure). The tests' own list (readModelTables) must hold
// them too.
func TestBenchEmptiesEveryReadModelTable(t *testing.T) {
	script, err := os.ReadFile("../bench/run.sh")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?s)rb_empty\(\) \{.*?TRUNCATE (.*?);`).FindSubmatch(script)
	require.NotNil(t, m, "bench/run.sh has no rb_empty TRUNCATE")
	truncated := map[string]bool{}
	for _, name := range strings.Split(string(m[1]), ",") {
		truncated[strings.TrimSpace(name)] = true
	}
	tested := map[string]bool{}
	for _, name := range readModelTables {
		tested[name] = true
	}
	for _, p := range projections.Default() {
		for _, table := range p.Tables() {
			assert.True(t, truncated[table], "bench/run.sh rb_empty does not empty %s (projection %s)", table, p.Name())
			assert.True(t, tested[table], "readModelTables lacks %s (projection %s)", table, p.Name())
		}
	}
}
