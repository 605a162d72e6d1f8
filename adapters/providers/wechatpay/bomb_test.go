package wechatpay

import (
	"bytes"
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
