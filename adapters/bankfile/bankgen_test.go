package bankfile_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBenchGeneratorIsAccepted: bench/bankgen's statements pass the strict
// parser (the bench would otherwise measure a refusal).
func TestBenchGeneratorIsAccepted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bench/bankgen")
	}
	out, err := exec.Command("go", "run", "../../bench/bankgen", "-entries", "250", "-run", "t").Output()
	require.NoError(t, err)
	f := t.TempDir() + "/s.xml"
	require.NoError(t, os.WriteFile(f, out, 0o600))
	c, err := parseAll(t, f)
	require.NoError(t, err)
	require.Len(t, c.entries, 250)
}
