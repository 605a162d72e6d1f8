package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNoCompiledFilesTracked keeps build output out of the repository:
// twice a `go build` in the wrong directory left a 15 MB executable at the
// root (loadgen in session 4, shipper in session 6), committed with the
// change beside it. A tracked file that starts with an executable's magic
// number (ELF, Mach-O, PE) fails here, naming it.
func TestNoCompiledFilesTracked(t *testing.T) {
	out, err := exec.Command("git", "-C", repoRoot, "ls-files", "-z").Output()
	require.NoError(t, err, "git ls-files: the test reads the tracked files through git")
	magics := [][]byte{
		{0x7f, 'E', 'L', 'F'},    // ELF (Linux)
		{0xcf, 0xfa, 0xed, 0xfe}, // Mach-O 64-bit
		{0xfe, 0xed, 0xfa, 0xcf},
		{'M', 'Z'}, // PE (Windows)
	}
	var compiled []string
	for _, name := range bytes.Split(bytes.TrimRight(out, "\x00"), []byte{0}) {
		path := filepath.Join(repoRoot, string(name))
		f, err := os.Open(path)
		if err != nil {
			continue // deleted in the working tree, not yet committed
		}
		head := make([]byte, 4)
		n, _ := f.Read(head)
		_ = f.Close()
		for _, m := range magics {
			if n >= len(m) && bytes.Equal(head[:len(m)], m) {
				compiled = append(compiled, string(name))
				break
			}
		}
	}
	require.Empty(t, compiled, "compiled files are tracked: git rm --cached them and add them to .gitignore")
}
