package alipay

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/adapters/providers/report/bombtest"
)

// Issue 33: a zip of 1M empty entries cost +225 MB in the directory
// archive/zip built. It is refused from its directory, nothing parsed, with
// the spooling buffer the only allocation of note.
func TestZipOfAMillionEntriesRefused(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err := ParseSettlement(bombtest.ZipEmptyEntries(1<<20), report.Options{}, func(report.Record) error {
		t.Fatal("a record from a refused file")
		return nil
	})
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, report.ErrArchiveLimit)
	require.ErrorIs(t, err, report.ErrMalformed)
	assert.ErrorContains(t, err, "zip entries over the limit of 64")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(8<<20), "bytes allocated")
}
