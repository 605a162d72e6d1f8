package wechatpay

import (
	"bytes"
	"compress/gzip"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/adapters/providers/report/bombtest"
)

// Issue 33: a 255 KB gzip bill inflating to 256 MiB on one line took the
// server to 1.7 GB (the CSV reader holds a line whole). It is refused
// after about 1 MiB inflated, with a few MB allocated.
func TestGzipBillBombRefused(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err := ParseSettlement(bytes.NewReader(bombtest.GzipOneLine()), report.Options{}, func(report.Record) error {
		t.Fatal("a record from a refused file")
		return nil
	})
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, report.ErrArchiveLimit)
	require.ErrorIs(t, err, report.ErrMalformed)
	assert.ErrorContains(t, err, "over the limit of")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "bytes allocated")

	// Not compressed: the line is bounded all the same.
	err = ParseSettlement(bytes.NewReader(bytes.Repeat([]byte{'a'}, 2<<20)), report.Options{}, func(report.Record) error { return nil })
	assert.ErrorContains(t, err, "line length in bytes over the limit of 1048576")
}

// quotedRecord is a bill whose second field opens a quote and never
// closes it: n bytes of short lines of letters that compress about 1.5
// times (a ratio no limit refuses), which the CSV reader (LazyQuotes)
// reads as one field of one record, held whole.
func quotedRecord(t *testing.T, n int) []byte {
	head, err := os.ReadFile("testdata/bill/fundflowbill.csv")
	require.NoError(t, err)
	// 64 KiB of lines of letters from a small LCG (the same every run),
	// repeated: deflate's window (32 KiB) is shorter than the period, so
	// the repeats compress no better than the block.
	var block bytes.Buffer
	x := uint32(1)
	for block.Len() < 64<<10 {
		for range 40 {
			x = x*1664525 + 1013904223
			block.WriteByte('a' + byte(x>>24)%26)
		}
		block.WriteByte('\n')
	}
	var b bytes.Buffer
	b.Write(head[:bytes.IndexByte(head, '\n')+1]) // a genuine header
	b.WriteString("`2026-11-30 09:12:05,\"")
	b.Write(bytes.Repeat(block.Bytes(), n/block.Len()+1))
	return b.Bytes()
}

// A quoted field spanning lines is one record the CSV reader holds whole:
// bounding lines alone let a bill of short lines (gzip within the ratio,
// or not compressed) be held whole in memory, up to the 1 GiB inflated.
// The record is bounded like a line.
func TestQuotedRecordSpanningLinesRefused(t *testing.T) {
	plain := quotedRecord(t, 12<<20)
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	require.NoError(t, err)
	_, err = zw.Write(plain)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.Less(t, len(plain)/gz.Len(), 100, "within the ratio limit")
	for name, body := range map[string][]byte{"gzip": gz.Bytes(), "plain": plain} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		err := ParseSettlement(bytes.NewReader(body), report.Options{}, func(report.Record) error { return nil })
		runtime.ReadMemStats(&after)
		require.ErrorIs(t, err, report.ErrArchiveLimit, name)
		assert.ErrorContains(t, err, "line length in bytes over the limit of 1048576", name)
		var pe *report.ParseError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, 2, pe.Line, "%s: the record's first line", name)
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(10<<20), "%s: bytes allocated: the record (12 MiB) is not held whole", name)
	}
}
