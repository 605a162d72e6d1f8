package main

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The rules over the repository itself: the tests that keep them.

var repo = sync.OnceValues(func() (*graph, error) {
	root, err := testRoot()
	if err != nil {
		return nil, err
	}
	return loadGraph(root)
})

func testRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return moduleRoot(wd)
}

// requireRule fails with every arrow the named rule finds in the module.
func requireRule(t *testing.T, name string) {
	t.Helper()
	g, err := repo()
	require.NoError(t, err)
	if v := ruleNamed(t, g.module, name).check(g); len(v) > 0 {
		t.Fatalf("%d forbidden arrows (cut them; do not loosen the rule):\n%s", len(v), strings.Join(v, "\n"))
	}
}

func TestDomainImportsNoInfrastructure(t *testing.T) {
	requireRule(t, "domain imports no infrastructure")
}

func TestNoStorageAdapterImportsAFrontEnd(t *testing.T) {
	requireRule(t, "no storage adapter imports a front end")
}

func TestTheFrontEndsImportNoStorageAdapter(t *testing.T) {
	requireRule(t, "the front ends import no storage adapter")
}

func TestNoFunctionOver120Lines(t *testing.T) {
	root, err := testRoot()
	require.NoError(t, err)
	files, err := goFiles(root)
	require.NoError(t, err)
	require.NotEmpty(t, files)
	long, err := longFunctions(root, files, maxFunctionLines)
	require.NoError(t, err)
	var lines []string
	for _, f := range long {
		lines = append(lines, f.String())
	}
	if len(lines) > 0 {
		t.Fatalf("%d functions over %d lines (split them into named steps):\n%s", len(lines), maxFunctionLines, strings.Join(lines, "\n"))
	}
}

// The checker itself, over synthetic violations.

const mod = "example.com/ledger"

// fakeGraph builds a graph from "importer: imported imported ..." lines;
// packages without a dot in their first element are standard.
func fakeGraph(lines ...string) *graph {
	g := &graph{module: mod, imports: map[string][]string{}, standard: map[string]bool{}}
	add := func(p string) {
		if _, ok := g.imports[p]; !ok {
			g.imports[p] = nil
			g.order = append(g.order, p)
			g.standard[p] = !strings.Contains(strings.Split(p, "/")[0], ".")
		}
	}
	for _, l := range lines {
		from, to, _ := strings.Cut(l, ":")
		from = expand(strings.TrimSpace(from))
		add(from)
		for _, imp := range strings.Fields(to) {
			imp = expand(imp)
			add(imp)
			g.imports[from] = append(g.imports[from], imp)
		}
	}
	return g
}

// expand spells ./x as a package of the module.
func expand(p string) string {
	if rest, ok := strings.CutPrefix(p, "./"); ok {
		return mod + "/" + rest
	}
	return p
}

// ruleNamed is the import rule of module called name.
func ruleNamed(t *testing.T, module, name string) layerRule {
	t.Helper()
	for _, r := range layerRules(module) {
		if r.name == name {
			return r
		}
	}
	t.Fatalf("no rule %q", name)
	return layerRule{}
}

func TestDomainRuleNamesEachForbiddenImport(t *testing.T) {
	g := fakeGraph(
		"./domain/money: errors fmt math",
		"./domain/payment: ./domain/money github.com/google/uuid encoding/json net/url time",
		"./domain/ledger: ./domain/money github.com/jackc/pgx/v5",
		"./domain/period: net/http ./domain/ledger",
		"./domain/settlement: ./projections database/sql/driver",
		"./projections: ./adapters/eventstore",
		"github.com/google/uuid: database/sql/driver crypto/rand",
	)
	got := ruleNamed(t, mod, "domain imports no infrastructure").check(g)
	assert.Equal(t, []string{
		"domain imports no infrastructure: domain/ledger → github.com/jackc/pgx/v5",
		"domain imports no infrastructure: domain/period → net/http",
		"domain imports no infrastructure: domain/settlement → projections",
		"domain imports no infrastructure: domain/settlement → database/sql/driver",
	}, got)
}

func TestStorageRuleNamesDirectAndTransitiveArrows(t *testing.T) {
	g := fakeGraph(
		"./adapters/postgres/readmodel: ./adapters/console ./projections",
		"./adapters/postgres/sessionstore: ./adapters/httpapi/access",
		"./adapters/esdb: ./adapters/eventstore ./adapters/ingest",
		"./adapters/ingest: ./domain/payment ./adapters/httpapi",
		"./adapters/httpapi: ./adapters/console",
		"./adapters/eventstore: github.com/google/uuid",
		"./projections: ./adapters/eventstore",
	)
	got := ruleNamed(t, mod, "no storage adapter imports a front end").check(g)
	assert.Equal(t, []string{
		"no storage adapter imports a front end: adapters/postgres/readmodel → adapters/console",
		"no storage adapter imports a front end: adapters/postgres/sessionstore → adapters/httpapi/access",
		"no storage adapter imports a front end: adapters/esdb → adapters/ingest → adapters/httpapi" +
			" (arrow adapters/ingest → adapters/httpapi, reached from adapters/esdb)",
	}, got, "the walk stops at the first front end: httpapi → console is not the storage adapter's arrow")
}

func TestFrontEndRuleFollowsTheChainIntoStorage(t *testing.T) {
	g := fakeGraph(
		"./adapters/httpapi: ./adapters/operations ./adapters/eventstore ./projections/views",
		"./adapters/operations: ./adapters/ingest",
		"./adapters/ingest: ./adapters/postgres",
		"./adapters/console: ./adapters/httpapi/access ./adapters/esdb/esdbfake",
		"./adapters/httpapi/access: crypto/sha256 ./adapters/postgres/sessionstore",
		"./adapters/postgres: github.com/jackc/pgx/v5",
	)
	got := ruleNamed(t, mod, "the front ends import no storage adapter").check(g)
	assert.Equal(t, []string{
		"the front ends import no storage adapter: adapters/httpapi → adapters/operations → adapters/ingest → adapters/postgres" +
			" (arrow adapters/ingest → adapters/postgres, reached from adapters/httpapi)",
		"the front ends import no storage adapter: adapters/console → adapters/esdb/esdbfake",
		"the front ends import no storage adapter: adapters/httpapi/access → adapters/postgres/sessionstore",
	}, got, "adapters/eventstore is a port, not a storage adapter, for the front ends;"+
		" the arrow from access is reported once, not again from console, which imports it")
}

func TestRulesHoldOnALayeredGraph(t *testing.T) {
	g := fakeGraph(
		"./domain/payment: ./domain/money github.com/google/uuid",
		"./projections: ./domain/payment ./adapters/eventstore",
		"./adapters/postgres/readmodel: ./projections ./projections/views github.com/jackc/pgx/v5",
		"./adapters/httpapi: ./projections/views ./adapters/access",
		"./adapters/console: ./projections/views ./adapters/access",
		"./cmd/onceledger: ./adapters/httpapi ./adapters/console ./adapters/postgres/readmodel",
	)
	for _, r := range layerRules(mod) {
		assert.Empty(t, r.check(g), r.name)
	}
}

// body returns n lines of statements.
func body(n int) string {
	return strings.Repeat("\t_ = 0\n", n)
}

func TestLengthRuleCountsFromFuncToClosingBrace(t *testing.T) {
	// 120 lines in all: func line, 118 body lines, closing brace.
	src := "package p\n\nfunc Fits() {\n" + body(118) + "}\n\n" +
		"type T struct{}\n\n// Long is one line too long.\nfunc (t *T) Long() {\n" + body(119) + "}\n"
	got, err := longFunctionsIn("p/p.go", []byte(src), maxFunctionLines)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, longFunction{File: "p/p.go", Line: 127, Name: "T.Long", Lines: 121}, got[0])
	assert.Equal(t, "no function over 120 lines: p/p.go:127: T.Long is 121 lines", got[0].String())
}

func TestLengthRuleMeasuresFunctionLiterals(t *testing.T) {
	src := "package p\n\nimport \"testing\"\n\n" +
		"func TestX(t *testing.T) {\n\tt.Run(\"a\", func(t *testing.T) {})\n\tt.Run(\"b\", func(t *testing.T) {\n" +
		body(125) + "\t})\n}\n\nvar handler = func() {\n" + body(121) + "}\n"
	got, err := longFunctionsIn("p/p_test.go", []byte(src), maxFunctionLines)
	require.NoError(t, err)
	var names []string
	for _, f := range got {
		names = append(names, fmt.Sprintf("%s:%d:%d", f.Name, f.Line, f.Lines))
	}
	assert.Equal(t, []string{"TestX:5:130", "TestX.func2:7:127", "handler.func1:136:123"}, names)
}

func TestLengthRuleSkipsGeneratedCode(t *testing.T) {
	src := "// Code generated by oapi-codegen. DO NOT EDIT.\n\npackage p\n\nfunc Big() {\n" + body(200) + "}\n"
	got, err := longFunctionsIn("p/client.go", []byte(src), maxFunctionLines)
	require.NoError(t, err)
	assert.Empty(t, got)

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(dir+"/go.mod", []byte("module "+mod+"\n"), 0o644))
	require.NoError(t, os.WriteFile(dir+"/client.gen.go", []byte("package p\n\nfunc Big() {\n"+body(200)+"}\n"), 0o644))
	require.NoError(t, os.WriteFile(dir+"/p.go", []byte("package p\n"), 0o644))
	files, err := walkGoFiles(dir)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"client.gen.go", "p.go"}, files)
	files, err = goFiles(dir)
	require.NoError(t, err)
	assert.NotContains(t, files, "client.gen.go")
}

func TestParseGraphReadsGoList(t *testing.T) {
	out := `{"ImportPath": "fmt", "Standard": true, "Imports": ["errors"]}
{"ImportPath": "example.com/ledger/domain/money", "Imports": ["fmt"], "Match": ["./..."]}
`
	g, err := parseGraph(mod, strings.NewReader(out))
	require.NoError(t, err)
	assert.Equal(t, []string{"fmt", mod + "/domain/money"}, g.order)
	assert.True(t, g.standard["fmt"])
	assert.Equal(t, []string{"fmt"}, g.imports[mod+"/domain/money"])
}
