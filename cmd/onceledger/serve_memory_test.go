package main

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// serve runs with a soft memory limit (issue 33), GOMEMLIMIT winning.
func TestServeHasASoftMemoryLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	oldGC := debug.SetGCPercent(-1)
	debug.SetGCPercent(oldGC)
	t.Cleanup(func() { debug.SetMemoryLimit(old); debug.SetGCPercent(oldGC) })
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "")
	serveMemory()
	assert.Equal(t, int64(DefaultServeMemoryLimit), debug.SetMemoryLimit(-1))
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "1GiB") // the runtime read it at start; serve leaves it alone
	serveMemory()
	assert.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1))
}
