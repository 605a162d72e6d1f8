package report_test

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/csv"
	"io"
	"math/rand/v2"
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

// The line limit bounds a CSV record as encoding/csv (LazyQuotes, as the
// bills are read) reads it: lines joined by a quoted field count as one,
// and nothing else joins them. Random texts of quotes, commas, CR and LF:
// the bound refuses exactly those whose longest record, by the CSV
// reader's own offsets, is over the limit.
func TestLineLimitIsTheCSVRecord(t *testing.T) {
	const limit = 12
	rng := rand.New(rand.NewPCG(33, 1))
	alphabet := []byte("ab\",\r\n\n")
	for i := range 20000 {
		b := make([]byte, 1+rng.IntN(60))
		for j := range b {
			b[j] = alphabet[rng.IntN(len(alphabet))]
		}
		if i%2 == 0 {
			b = append(b, '\n')
		}
		longest := longestRecord(t, b)
		_, err := io.ReadAll(report.Bound(bytes.NewReader(b), report.Limits{MaxLine: limit}, nil))
		switch {
		case longest > limit:
			require.ErrorIs(t, err, report.ErrArchiveLimit, "%q: a record of %d bytes", b, longest)
		case longest < limit:
			require.NoError(t, err, "%q: records of at most %d bytes", b, longest)
		default:
			// At the limit exactly: a quoted field still open at the end
			// of the file counts its last line feed too (the CSV reader
			// ends the record there), one byte more.
		}
	}
	// The shapes by name, within a limit of 20.
	for _, c := range []struct {
		text   string
		refuse bool
	}{
		{"a,\"open\n" + strings.Repeat("bbbbbb\n", 3), true},            // never closed
		{"a,\"two\nlines\",c\n" + strings.Repeat("bbbbbb\n", 3), false}, // closed
		{"x\"y,z\n" + strings.Repeat("bbbbbb\n", 3), false},             // a bare quote in an unquoted field
		{"\"a\"\"b\",c\n" + strings.Repeat("bbbbbb\n", 3), false},       // an escaped quote
		{"\"ab\"c,d\n" + strings.Repeat("bbbbbb\n", 3), true},           // a bare quote keeps the field open
		{"\"ab\"\r\n" + strings.Repeat("bbbbbb\n", 3), false},           // closed before CR LF
	} {
		_, err := io.ReadAll(report.Bound(strings.NewReader(c.text), report.Limits{MaxLine: 20}, nil))
		assert.Equal(t, c.refuse, err != nil, "%q: %v", c.text, err)
		assert.Equal(t, c.refuse, longestRecord(t, []byte(c.text)) > 20, "%q: as encoding/csv reads it", c.text)
	}
}

// longestRecord is the length in bytes of b's longest record as
// encoding/csv reads it (its line feed and the empty lines it skips before
// it left out).
func longestRecord(t *testing.T, b []byte) int {
	cr := csv.NewReader(bytes.NewReader(b))
	cr.FieldsPerRecord, cr.LazyQuotes = -1, true
	longest := 0
	var at int64
	for {
		_, err := cr.Read()
		if err == io.EOF {
			return longest
		}
		require.NoError(t, err)
		rec := b[at:cr.InputOffset()]
		at = cr.InputOffset()
		for {
			if r, ok := bytes.CutPrefix(rec, []byte("\n")); ok {
				rec = r
			} else if r, ok := bytes.CutPrefix(rec, []byte("\r\n")); ok {
				rec = r
			} else {
				break
			}
		}
		rec = bytes.TrimSuffix(rec, []byte("\n"))
		longest = max(longest, len(rec))
	}
}

// A zip entry's ratio is taken against its declared compressed size: an
// entry declaring more compressed bytes than the file holds (archive/zip
// never checks) made any bomb's ratio look small. Such a zip is refused
// when opened, before anything is inflated.
func TestZipEntryDeclaringMoreThanTheFileRefused(t *testing.T) {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.Create("a_业务明细.csv")
	require.NoError(t, err)
	_, err = io.WriteString(w, strings.Repeat("a,b\n", 1<<18)) // 1 MiB, a ratio of hundreds
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	raw := b.Bytes()
	dir := bytes.LastIndex(raw, []byte("PK\x01\x02"))
	require.Positive(t, dir)
	binary.LittleEndian.PutUint32(raw[dir+20:], 0xFFFFFF00) // compressed size: ~4 GiB
	z, err := report.OpenZip(bytes.NewReader(raw), int64(len(raw)), report.DefaultLimits)
	if err == nil {
		// Before: it opened, and the ratio was taken against 4 GiB.
		rc, oerr := report.OpenEntry(z.File[0], report.Limits{MaxRatio: 100, RatioFloor: 1 << 10})
		require.NoError(t, oerr)
		_, err = io.ReadAll(rc)
		require.ErrorIs(t, err, report.ErrArchiveLimit, "the ratio, against what the file holds")
		return
	}
	require.ErrorIs(t, err, report.ErrMalformed)
	assert.ErrorContains(t, err, "compressed bytes")
}

// Every CSV report (Stripe, Adyen, PayPal: NewCSV) is bounded by the line
// limit too, as docs/security.md says ("a line of a report, compressed or
// not"): a record the CSV reader would hold whole, here a quoted field
// spanning 3 MiB of short lines, is refused at its first line instead of
// being held (twice: the record and the copy kept to place an error).
func TestCSVReportRecordBounded(t *testing.T) {
	text := "a,b\n1,\"" + strings.Repeat("xxxxxxxxxxxxxxx\n", 3<<16) + "\"\n"
	c := report.NewCSV(strings.NewReader(text))
	require.NoError(t, c.ReadHeader())
	err := c.Next()
	wantLimit(t, err, "line length in bytes over the limit of 1048576")
	var pe *report.ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 2, pe.Line)

	ok := report.NewCSV(strings.NewReader("a,b\n1,\"two\nlines\"\n"))
	require.NoError(t, ok.ReadHeader())
	require.NoError(t, ok.Next())
	assert.Equal(t, "two\nlines", ok.Field(1))
}

// A zip entry is read line by line (Alipay's detail bill: each line its
// own record, parsed alone), so a quote that does not close on its line
// joins nothing: a genuine bill whose product name opens a quote is not
// refused as one long record.
func TestZipEntryBoundsLines(t *testing.T) {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.Create("a_业务明细.csv")
	require.NoError(t, err)
	_, err = io.WriteString(w, "2026-11-29,\"Brand\" shoes,88.00\n"+strings.Repeat("2026-11-29,shoes,88.00\n", 1<<16))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	z, err := report.OpenZip(bytes.NewReader(b.Bytes()), int64(b.Len()), report.DefaultLimits)
	require.NoError(t, err)
	rc, err := report.OpenEntry(z.File[0], report.Limits{MaxLine: 1 << 20})
	require.NoError(t, err)
	out, err := io.ReadAll(rc)
	require.NoError(t, err)
	assert.Greater(t, len(out), 1<<20)
}
