package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// graph is the import graph of the module's packages and their
// dependencies: each package's imports from its non-test files.
type graph struct {
	module   string              // the module path
	imports  map[string][]string // import path → what its non-test files import
	standard map[string]bool     // packages of the standard library
	order    []string            // the packages in go list's order
}

// listedPackage is what the rules read of a `go list -json` record.
type listedPackage struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Module     *struct{ Path string }
	Match      []string // set on the packages ./... named, not on their dependencies
}

// loadGraph runs `go list -deps -json ./...` in the module at root.
func loadGraph(root string) (*graph, error) {
	cmd := exec.Command("go", "list", "-deps", "-json", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps -json ./...: %w: %s", err, stderr.String())
	}
	mod, err := modulePath(root)
	if err != nil {
		return nil, err
	}
	return parseGraph(mod, bytes.NewReader(out))
}

// parseGraph reads the stream of JSON records go list prints.
func parseGraph(module string, r io.Reader) (*graph, error) {
	g := &graph{module: module, imports: map[string][]string{}, standard: map[string]bool{}}
	dec := json.NewDecoder(r)
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		g.imports[p.ImportPath] = p.Imports
		g.standard[p.ImportPath] = p.Standard
		g.order = append(g.order, p.ImportPath)
	}
	return g, nil
}

// modulePath reads the module line of root/go.mod.
func modulePath(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	return "", fmt.Errorf("%s: no module line", filepath.Join(root, "go.mod"))
}

// moduleRoot is the nearest directory at or above dir holding a go.mod.
func moduleRoot(dir string) (string, error) {
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", fmt.Errorf("%s: %w", dir, errNoModule)
		}
		d = up
	}
}

// layerRule is one forbidden kind of arrow in the import graph: no package
// that from selects may reach a package that forbidden selects, directly
// or through packages of the module (outside packages cannot import the
// module back, so a walk stops there).
type layerRule struct {
	name      string
	from      func(path string) bool
	forbidden func(g *graph, path string) bool
}

// domainMayImport lists what domain/... may import beyond the standard
// library and itself: pure libraries with no I/O of their own.
var domainMayImport = []string{
	"github.com/google/uuid",
}

// domainMayNotImport are the standard packages that are infrastructure: a
// network, a server, a database, processes or files ("dir/..." is dir and
// the packages below it).
var domainMayNotImport = []string{
	"net", "net/http/...", "net/rpc/...", "net/smtp", "database/sql/...",
	"os", "os/exec", "os/signal", "plugin", "syscall",
}

// layerRules are the import rules of the module at path mod.
func layerRules(mod string) []layerRule {
	under := func(dirs ...string) func(string) bool {
		return func(p string) bool {
			for _, d := range dirs {
				if within(p, mod+"/"+d) {
					return true
				}
			}
			return false
		}
	}
	domain := under("domain")
	frontEnd := under("adapters/console", "adapters/httpapi")
	return []layerRule{
		{
			name: "domain imports no infrastructure",
			from: domain,
			forbidden: func(g *graph, p string) bool {
				switch {
				case within(p, mod):
					return !domain(p)
				case g.standard[p]:
					return slices.ContainsFunc(domainMayNotImport, func(f string) bool { return matches(p, f) })
				default:
					return !slices.ContainsFunc(domainMayImport, func(a string) bool { return within(p, a) })
				}
			},
		},
		{
			name:      "no storage adapter imports a front end",
			from:      under("adapters/postgres", "adapters/esdb", "adapters/eventstore"),
			forbidden: func(_ *graph, p string) bool { return frontEnd(p) },
		},
		{
			name:      "the front ends import no storage adapter",
			from:      frontEnd,
			forbidden: func(_ *graph, p string) bool { return under("adapters/postgres", "adapters/esdb")(p) },
		},
	}
}

// matches: p is pattern, or below it when pattern ends in "/...".
func matches(p, pattern string) bool {
	if dir, ok := strings.CutSuffix(pattern, "/..."); ok {
		return within(p, dir)
	}
	return p == pattern
}

// within: p is dir or a package below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// check returns one line per forbidden arrow: for each package the rule
// constrains and each forbidden package it reaches, the shortest chain of
// imports that reaches it. The walk does not go through a forbidden
// package (its own imports are a consequence of the arrow to cut), nor
// through another package the rule constrains.
func (r layerRule) check(g *graph) []string {
	var out []string
	for _, from := range g.order {
		if !r.from(from) {
			continue
		}
		for _, chain := range r.reach(g, from) {
			out = append(out, r.describe(g.module, chain))
		}
	}
	return out
}

// reach walks the graph breadth-first from from and returns the chain to
// each forbidden package it finds.
func (r layerRule) reach(g *graph, from string) [][]string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	var found [][]string
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range g.imports[p] {
			if _, seen := prev[imp]; seen {
				continue
			}
			prev[imp] = p
			if r.forbidden(g, imp) {
				found = append(found, chainTo(prev, imp))
				continue
			}
			// A package the rule constrains is checked on its own: its
			// arrows are reported once, from there.
			if within(imp, g.module) && !r.from(imp) {
				queue = append(queue, imp)
			}
		}
	}
	return found
}

// chainTo follows prev back from to to the start of the walk.
func chainTo(prev map[string]string, to string) []string {
	var chain []string
	for p := to; p != ""; p = prev[p] {
		chain = append(chain, p)
	}
	slices.Reverse(chain)
	return chain
}

// describe says which arrow breaks the rule; for a transitive one, the
// arrow to cut is the last of the chain.
func (r layerRule) describe(mod string, chain []string) string {
	short := make([]string, len(chain))
	for i, p := range chain {
		short[i] = strings.TrimPrefix(p, mod+"/")
	}
	n := len(short)
	if n == 2 {
		return fmt.Sprintf("%s: %s → %s", r.name, short[0], short[1])
	}
	return fmt.Sprintf("%s: %s → %s (arrow %s → %s, reached from %s)", r.name,
		short[0], strings.Join(short[1:], " → "), short[n-2], short[n-1], short[0])
}
