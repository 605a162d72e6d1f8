package main

import (
	"testing"

	"github.com/alecthomas/kong"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 33's variable is known to the unknown-variable check, a typo of it
// is refused naming it, and a non-positive value refuses serve.
func TestUploadIdleTimeoutVariable(t *testing.T) {
	_, _, err := parse([]string{"status"}, []string{"ONCELEDGER_UPLOAD_IDLE_TIMEOUT=45s"}, kong.Exit(func(int) { t.Fatal("kong exited") }))
	require.NoError(t, err)
	_, _, err = parse([]string{"status"}, []string{envPrefix + "UPLOAD_IDLE_TIMOUT=45s"}, kong.Exit(func(int) { t.Fatal("kong exited") }))
	assert.ErrorContains(t, err, "did you mean ONCELEDGER_UPLOAD_IDLE_TIMEOUT?")
	assert.ErrorContains(t, hostileFlags{}.validate(), "ONCELEDGER_UPLOAD_IDLE_TIMEOUT must be positive")
	assert.NoError(t, hostileFlags{UploadIdleTimeout: 1}.validate())
}
