package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The misspelt names are built from envPrefix, so that the repository's
// code names no ONCELEDGER_* variable nothing reads
// (TestReferenceToolVariables).
var (
	typoStandard = envPrefix + "STANDARD_SECRET"
	typoToken    = envPrefix + "API_TOKEN"
	typoFar      = envPrefix + "QWERTYUIOPASDF"
)

// A variable nothing reads is a start-up error naming the closest known
// one: a typo'd secret must not start a server whose webhooks all answer
// 404 with nothing saying why.
func TestConfigUnknownVariableIsAnError(t *testing.T) {
	_, _, err := parse([]string{"status"}, []string{
		"PATH=/bin",
		typoStandard + "=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		typoToken + "=tok",
		typoFar + "=1",
		"ONCELEDGER_API_TOKENS=tok",
	}, kong.Exit(func(int) { t.Fatal("kong exited") }))
	require.Error(t, err)
	assert.ErrorContains(t, err, typoStandard+" is set, but onceledger reads no such variable: did you mean ONCELEDGER_STANDARD_SECRETS?")
	assert.ErrorContains(t, err, typoToken+" is set, but onceledger reads no such variable: did you mean ONCELEDGER_API_TOKENS?")
	assert.ErrorContains(t, err, typoFar+" is set, but onceledger reads no such variable (docs/reference.md lists them)")
	assert.NotContains(t, err.Error(), "PATH")
	assert.NotContains(t, err.Error(), "ONCELEDGER_API_TOKENS is set")
}

// Known means read by any command, whichever runs: another command's
// flags, hidden flags, the registry's API variables and the tools'.
func TestConfigKnownVariablesOfEveryCommand(t *testing.T) {
	for _, v := range []string{
		"ONCELEDGER_ACTOR",                        // redrive's
		"ONCELEDGER_STRIPE_API_KEY",               // settle sync's and backfill's (the registry's API client)
		"ONCELEDGER_CPU_PROFILE",                  // hidden
		"ONCELEDGER_TEST_EXIT_AFTER_BATCH_COMMIT", // hidden, serve's
		"ONCELEDGER_TEST_DATABASE_URL",            // the tests'
		"ONCELEDGER_DEVDB_DEFAULT_ADDR",           // scripts/devdb.sh's
		"ONCELEDGER_CHAOS_SCALE",                  // the fault suite's
		"ONCELEDGER_SCREENSHOTS", "ONCELEDGER_CHROMIUM",
	} {
		_, _, err := parse([]string{"status"}, []string{v + "=x"}, kong.Exit(func(int) { t.Fatal("kong exited") }))
		assert.NoError(t, err, v)
	}
}

func TestConfigClosestName(t *testing.T) {
	names := []string{"ONCELEDGER_ADDR", "ONCELEDGER_ADMIN_TOKENS", "ONCELEDGER_API_TOKENS"}
	assert.Equal(t, "ONCELEDGER_ADDR", closest(envPrefix+"ADR", names))
	assert.Equal(t, "ONCELEDGER_ADMIN_TOKENS", closest(envPrefix+"ADMIN_TOKEN", names))
	assert.Empty(t, closest(envPrefix+"LOG", names))
	assert.Equal(t, 3, editDistance("kitten", "sitting"))
	assert.Equal(t, 0, editDistance("", ""))
}

var envMention = regexp.MustCompile(`ONCELEDGER_[A-Z0-9_]+`)

// toolVariables is the one list of the tools' variables: each is read
// somewhere in the repository (not only listed) and documented in
// docs/reference.md, and every ONCELEDGER_* name the repository's code
// uses is known: a flag's, a provider's or a tool's. Provider packages
// are left out: their variables are the registry's, from their kong tags,
// and a package not yet in the registry names its own.
func TestReferenceToolVariables(t *testing.T) {
	ref, err := os.ReadFile(referencePath)
	require.NoError(t, err)
	files := repositoryFiles(t)
	for _, v := range toolVariables {
		readers := 0
		for path, text := range files {
			if filepath.Base(path) != "environment.go" && strings.Contains(text, v) {
				readers++
			}
		}
		assert.Positive(t, readers, "toolVariables lists %s, which nothing in the repository reads: remove it", v)
		assert.True(t, strings.Contains(string(ref), v), "%s (toolVariables) is not documented in docs/reference.md", v)
	}
	known := knownVariables(cliModel(t))
	for path, text := range files {
		if strings.Contains(filepath.ToSlash(path), "adapters/providers/") {
			continue
		}
		for _, v := range envMention.FindAllString(text, -1) {
			assert.True(t, known[v], "%s names %s, which neither a flag, the provider registry nor toolVariables (cmd/onceledger/environment.go) has: onceledger would refuse it at start", path, v)
		}
	}
}
