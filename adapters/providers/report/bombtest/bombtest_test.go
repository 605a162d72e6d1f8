package bombtest_test

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
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

// The gzip bomb is 256 copies of one gzip member of 1 MiB of 'a' without
// a line feed (256 MiB inflated, as readers read the members as one
// stream), in less than 300 KB.
func TestGzipOneLineIsAGzipBomb(t *testing.T) {
	bomb := bombtest.GzipOneLine()
	require.Less(t, len(bomb), 300<<10)
	require.Zero(t, len(bomb)%256)
	member := bomb[:len(bomb)/256]
	require.Equal(t, bytes.Repeat(member, 256), bomb)
	zr, err := gzip.NewReader(bytes.NewReader(member))
	require.NoError(t, err)
	zr.Multistream(false)
	one, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.Equal(t, bytes.Repeat([]byte{'a'}, 1<<20), one)
}
