package report_test

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/adapters/providers/report/bombtest"
)

// allocated is how many bytes f allocates on the heap (cumulative: a
// buffer held whole shows however briefly it lived).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func wantLimit(t *testing.T, err error, limit string) {
	t.Helper()
	require.ErrorIs(t, err, report.ErrArchiveLimit)
	require.ErrorIs(t, err, report.ErrMalformed, "a *ParseError: 400, exit status 1")
	assert.ErrorContains(t, err, limit)
}

// Issue 33: 255 KB inflating to 256 MiB on one line is refused past 1 MiB
// inflated (its ratio, ~1000, crosses 100 first; its line would at 1 MiB
// too), with a few MB allocated.
func TestGzipBombRefusedAtTheLineLimit(t *testing.T) {
	bomb := bombtest.GzipOneLine()
	require.Less(t, len(bomb), 300<<10)
	var err error
	alloc := allocated(func() {
		var r io.Reader
		r, err = report.Gunzip(bufio.NewReader(bytes.NewReader(bomb)), report.DefaultLimits)
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, r)
	})
	wantLimit(t, err, "compression ratio over the limit of 100")
	assert.Less(t, alloc, uint64(16<<20), "bytes allocated")
	alloc = allocated(func() {
		var r io.Reader
		r, err = report.Gunzip(bufio.NewReader(bytes.NewReader(bomb)), report.Limits{MaxLine: 1 << 20})
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, r)
	})
	wantLimit(t, err, "line length in bytes over the limit of 1048576")
	assert.Less(t, alloc, uint64(16<<20), "bytes allocated")
}

func gz(t *testing.T, s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, err := io.WriteString(w, s)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return b.Bytes()
}

// Each limit on its own, and a file within all of them read whole.
func TestInflateLimits(t *testing.T) {
	read := func(b []byte, l report.Limits) (string, error) {
		r, err := report.Gunzip(bufio.NewReader(bytes.NewReader(b)), l)
		if err != nil {
			return "", err
		}
		out, err := io.ReadAll(r)
		return string(out), err
	}
	lines := strings.Repeat("2026-11-29,`4200000001,`88.00\n", 1000)
	got, err := read(gz(t, lines), report.DefaultLimits)
	require.NoError(t, err)
	assert.Equal(t, lines, got)

	_, err = read(gz(t, lines), report.Limits{MaxBytes: 1000})
	wantLimit(t, err, "inflated size in bytes over the limit of 1000")
	_, err = read(gz(t, strings.Repeat("a,b\n", 1<<20)), report.Limits{MaxRatio: 100, RatioFloor: 1 << 20})
	wantLimit(t, err, "compression ratio over the limit of 100")
	_, err = read(gz(t, "a\n"+strings.Repeat("b", 100)+"\n"), report.Limits{MaxLine: 99})
	wantLimit(t, err, "line length in bytes over the limit of 99")
	var pe *report.ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 2, pe.Line, "the line that crossed it")
	_, err = read([]byte{0x1f, 0x8b, 0, 0}, report.DefaultLimits)
	require.ErrorIs(t, err, report.ErrMalformed)
}

// A zip of 1M empty entries (76 MB, streamed to a spool file as an upload
// is) is refused from its directory before archive/zip allocates for it.
func TestZipOfAMillionEntriesRefused(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "bomb-*.zip")
	require.NoError(t, err)
	defer f.Close()
	n, err := io.Copy(f, bombtest.ZipEmptyEntries(1<<20))
	require.NoError(t, err)
	alloc := allocated(func() { _, err = report.OpenZip(f, n, report.DefaultLimits) })
	wantLimit(t, err, "zip entries over the limit of 64")
	assert.Less(t, alloc, uint64(4<<20), "bytes allocated")
}

// A zip within the limits opens; its entry reads bounded.
func TestZipWithinLimits(t *testing.T) {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.Create("a_业务明细.csv")
	require.NoError(t, err)
	_, err = io.WriteString(w, strings.Repeat("x", 200)+"\n")
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	z, err := report.OpenZip(bytes.NewReader(b.Bytes()), int64(b.Len()), report.DefaultLimits)
	require.NoError(t, err)
	require.Len(t, z.File, 1)
	rc, err := report.OpenEntry(z.File[0], report.DefaultLimits)
	require.NoError(t, err)
	out, err := io.ReadAll(rc)
	require.NoError(t, err)
	assert.Len(t, out, 201)
	rc, err = report.OpenEntry(z.File[0], report.Limits{MaxLine: 100})
	require.NoError(t, err)
	_, err = io.ReadAll(rc)
	wantLimit(t, err, "line length")
	_, err = report.OpenEntry(z.File[0], report.Limits{MaxBytes: 100})
	wantLimit(t, err, "inflated size in bytes over the limit of 100")
}
