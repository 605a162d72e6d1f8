package bombtest_test

import (
	"archive/zip"
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/report/bombtest"
)

// The generated zip is one archive/zip reads entry by entry, past its
// wrapped 16-bit count: a bomb only if the reader is left to it.
func TestZipEmptyEntriesIsAZip(t *testing.T) {
	b, err := io.ReadAll(bombtest.ZipEmptyEntries(70000))
	require.NoError(t, err)
	z, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	require.NoError(t, err)
	require.Len(t, z.File, 70000)
}
