package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/onceledger/onceledger/adapters/providers/registry"
)

// envPrefix is the prefix of every variable onceledger and its tooling
// read: a variable with it that nothing reads is a mistake (a typo, a
// renamed setting), refused at start rather than silently ignored.
const envPrefix = "ONCELEDGER_"

// toolVariables are the ONCELEDGER_* variables read by the development
// tooling and the tests rather than by a flag of the binary
// (docs/reference.md, "Development and test variables"). They are set in
// the shells and CI jobs that also run onceledger, so it must know them.
// This is the one list: TestReferenceToolVariables checks that each is
// read somewhere in the repository and documented, and that every
// ONCELEDGER_* name the repository's code uses is a flag's, a provider's
// or one of these.
var toolVariables = []string{
	"ONCELEDGER_TEST_DATABASE_URL",    // the server the tests create their databases on (pgtest, make test)
	"ONCELEDGER_TEST_ESDB_URL",        // a real EventStoreDB for the contract suite
	"ONCELEDGER_TEST_NATS_URL",        // the nats-server -js the JetStream tests use (default 127.0.0.1:4222)
	"ONCELEDGER_TEST_PROPERTY_RUNS",   // the settlement property tests: more (and bigger) generated cases
	"ONCELEDGER_TEST_PROPERTY_SEED",   // the settlement property tests: replay a printed seed
	"ONCELEDGER_SCREENSHOTS",          // the console's browser test writes docs/console/*.png
	"ONCELEDGER_CRAWL_URL",            // the console's crawler crawls this server instead (make screenshots)
	"ONCELEDGER_CRAWL_TOKEN",          // its admin token
	"ONCELEDGER_CHROMIUM",             // the browser the console's browser test drives
	"ONCELEDGER_DEVDB_DIR",            // scripts/devdb.sh: where the development cluster lives
	"ONCELEDGER_DEVDB_DEFAULT_ADDR",   // scripts/devdb.sh: the address probed for a server
	"ONCELEDGER_DEVDB_PG_BIN",         // scripts/devdb.sh: initdb and pg_ctl
	"ONCELEDGER_CHAOS_PG_BIN",         // the fault suite (cmd/loadgen/chaos): initdb and pg_ctl
	"ONCELEDGER_CHAOS_SCALE",          // the fault suite's load multiplier
	"ONCELEDGER_CHAOS_SERVER_BIN",     // the fault suite's prebuilt server
	"ONCELEDGER_CHAOS_READ_TIMEOUT",   // the fault suite's slow-client bound
	"ONCELEDGER_BANK_PROPERTY_CHECKS", // the bank statements' property test: more generated fortnights
}

// knownVariables are every ONCELEDGER_* variable something reads: the
// flags' twins of every command (the kong model, hidden flags included),
// the provider registry's variables and toolVariables.
func knownVariables(root *kong.Node) map[string]bool {
	known := map[string]bool{}
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, f := range n.Flags {
			for _, e := range f.Envs {
				known[e] = true
			}
		}
		for _, ch := range n.Children {
			walk(ch)
		}
	}
	walk(root)
	for _, v := range registry.Variables() {
		known[v.Env] = true
	}
	for _, v := range toolVariables {
		known[v] = true
	}
	return known
}

// checkEnvironment refuses ONCELEDGER_* variables of environ (os.Environ's
// form) that nothing reads, each with the closest known name: a typo'd
// secret would otherwise start the server with the provider answering 404
// and nothing saying why.
func checkEnvironment(root *kong.Node, environ []string) error {
	known := knownVariables(root)
	var names []string
	for k := range known {
		names = append(names, k)
	}
	slices.Sort(names)
	var errs []error
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) || known[name] {
			continue
		}
		msg := fmt.Sprintf("%s is set, but onceledger reads no such variable", name)
		if near := closest(name, names); near != "" {
			msg += ": did you mean " + near + "?"
		} else {
			msg += " (docs/reference.md lists them)"
		}
		errs = append(errs, errors.New(msg))
	}
	return errors.Join(errs...)
}

// closest is the name of names nearest to name by edit distance, or ""
// when none is near enough to be the one meant: within a third of the
// part after the prefix, at least two edits.
func closest(name string, names []string) string {
	rest := strings.TrimPrefix(name, envPrefix)
	limit := max(2, len(rest)/3)
	best, bestD := "", limit+1
	for _, n := range names {
		if d := editDistance(rest, strings.TrimPrefix(n, envPrefix)); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (bytes: the names
// are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
