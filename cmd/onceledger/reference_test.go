package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/gorilla/mux"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/cmd/onceledger/app"
)

// docs/reference.md is the project's reference. These tests keep it true
// both ways: every command, flag, variable and route the code has is
// documented there, and everything documented there exists. The page's
// convention (stated at its top): a table row whose first cell is code is a
// definition: `onceledger …` a command, `--flag` (with its ONCELEDGER_*
// twin in the same row) a flag of the command the section's heading names,
// `METHOD /path` a route.

const referencePath = "../../docs/reference.md"

// reference is what docs/reference.md defines.
type reference struct {
	commands []string            // command paths: "settle sync stripe"
	flags    map[string][]docRow // by command path ("" = every command)
	routes   []docRoute
	// inherits: a section saying "every flag of `onceledger X`" takes X's
	// documented flags too (redrive embeds serve's configuration).
	inherits map[string][]string
}

type docRow struct {
	flags []string // "--addr"
	envs  []string // "ONCELEDGER_ADDR"
	line  int
}

type docRoute struct {
	method, path string // path with {…} parameters as written
	line         int
}

var (
	codeSpan     = regexp.MustCompile("`([^`]+)`")
	commandWord  = regexp.MustCompile(`^[a-z][a-z-]*$`)
	envName      = regexp.MustCompile(`^ONCELEDGER_[A-Z0-9_]+$`)
	routeCell    = regexp.MustCompile(`^(GET|HEAD|POST|PUT|PATCH|DELETE) (/\S*)$`)
	inheritsFrom = regexp.MustCompile("every flag of `onceledger ([a-z -]+)`")
)

// parseReference reads the definitions of docs/reference.md.
func parseReference(t *testing.T) reference {
	t.Helper()
	b, err := os.ReadFile(referencePath)
	require.NoError(t, err)
	ref := reference{flags: map[string][]docRow{}, inherits: map[string][]string{}}
	section, inFence := "-", false // "-": a section that names no command
	for i, line := range strings.Split(string(b), "\n") {
		n := i + 1
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		switch {
		case inFence:
		case strings.HasPrefix(line, "#"):
			section = headingCommand(line)
		case strings.HasPrefix(line, "|"):
			ref.addRow(t, section, line, n)
		default:
			for _, m := range inheritsFrom.FindAllStringSubmatch(line, -1) {
				ref.inherits[section] = append(ref.inherits[section], strings.TrimSpace(m[1]))
			}
		}
	}
	return ref
}

// headingCommand is the command a heading names (`onceledger settle
// import` → "settle import", `onceledger` → ""), or "-".
func headingCommand(line string) string {
	for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
		if w := strings.Fields(m[1]); len(w) > 0 && w[0] == "onceledger" {
			return commandPath(w[1:])
		}
	}
	return "-"
}

// commandPath keeps the leading command words: placeholders, flags and
// brackets end it.
func commandPath(words []string) string {
	var path []string
	for _, w := range words {
		if !commandWord.MatchString(w) {
			break
		}
		path = append(path, w)
	}
	return strings.Join(path, " ")
}

func (ref *reference) addRow(t *testing.T, section, line string, n int) {
	cells := strings.Split(strings.ReplaceAll(line, `\|`, "¦"), "|")
	if len(cells) < 3 {
		return
	}
	first := strings.TrimSpace(cells[1])
	if !strings.HasPrefix(first, "`") {
		return
	}
	spans := codeSpan.FindAllStringSubmatch(first, -1)
	if len(spans) == 0 {
		return
	}
	lead := spans[0][1]
	switch {
	case strings.HasPrefix(lead, "onceledger"):
		ref.commands = append(ref.commands, commandPath(strings.Fields(lead)[1:]))
	case strings.HasPrefix(lead, "--"):
		require.NotEqual(t, "-", section, "reference.md:%d: a flag row outside a section naming its command", n)
		row := docRow{line: n}
		for _, s := range spans {
			switch v := s[1]; {
			case strings.HasPrefix(v, "--"):
				row.flags = append(row.flags, strings.Fields(v)[0])
			case envName.MatchString(v):
				row.envs = append(row.envs, v)
			}
		}
		ref.flags[section] = append(ref.flags[section], row)
	case routeCell.MatchString(lead):
		m := routeCell.FindStringSubmatch(lead)
		path, _, _ := strings.Cut(m[2], "?")
		ref.routes = append(ref.routes, docRoute{method: m[1], path: path, line: n})
	}
}

// documentedFlags are the rows of a command's section and of the sections
// it inherits.
func (ref *reference) documentedFlags(cmd string) []docRow {
	rows := slices.Clone(ref.flags[cmd])
	for _, from := range ref.inherits[cmd] {
		rows = append(rows, ref.flags[from]...)
	}
	return rows
}

// referenceCLI is the configuration as main parses it. When the provider
// flags come from a registry through kong.Plugins, this must be the
// constructor main uses (newCLI), or those flags are missing from the model.
func referenceCLI() *cli { return newCLI() }

// cliModel is the kong model of the command line, built as main builds it.
func cliModel(t *testing.T) *kong.Node {
	t.Helper()
	p, err := kong.New(referenceCLI(), kong.Name("onceledger"))
	require.NoError(t, err)
	return p.Model.Node
}

// commandNodes maps each visible command path ("" = the root) to its node.
func commandNodes(root *kong.Node) map[string]*kong.Node {
	out := map[string]*kong.Node{}
	var walk func(n *kong.Node, path []string)
	walk = func(n *kong.Node, path []string) {
		if n.Hidden {
			return
		}
		out[strings.Join(path, " ")] = n
		for _, ch := range n.Children {
			walk(ch, append(slices.Clone(path), ch.Name))
		}
	}
	walk(root, nil)
	return out
}

func TestReferenceDocumentsEveryCommand(t *testing.T) {
	ref := parseReference(t)
	nodes := commandNodes(cliModel(t))
	for path, n := range nodes {
		if path == "" {
			continue
		}
		leaf := len(n.Children) == 0
		found := slices.ContainsFunc(ref.commands, func(c string) bool {
			return c == path || (!leaf && strings.HasPrefix(c, path+" "))
		})
		require.True(t, found, "command `onceledger %s` is not in docs/reference.md's command table", path)
	}
	for _, c := range ref.commands {
		_, ok := nodes[c]
		require.True(t, ok && c != "", "docs/reference.md documents `onceledger %s`, which the command line does not have", c)
	}
}

func TestReferenceDocumentsEveryFlagAndVariable(t *testing.T) {
	ref := parseReference(t)
	nodes := commandNodes(cliModel(t))
	for path, n := range nodes {
		rows := ref.documentedFlags(path)
		for _, f := range n.Flags {
			if f.Hidden {
				continue
			}
			i := slices.IndexFunc(rows, func(r docRow) bool { return slices.Contains(r.flags, "--"+f.Name) })
			require.GreaterOrEqual(t, i, 0, "flag --%s of `onceledger %s` is not documented in its section of docs/reference.md", f.Name, path)
			for _, env := range f.Envs {
				require.Contains(t, rows[i].envs, env, "reference.md:%d: --%s of `onceledger %s` reads %s: name it in the flag's row", rows[i].line, f.Name, path, env)
			}
		}
	}
	for section, rows := range ref.flags {
		n, ok := nodes[section]
		require.True(t, ok, "docs/reference.md has flags of `onceledger %s`, which the command line does not have", section)
		for _, r := range rows {
			var envs []string
			for _, name := range r.flags {
				f := findFlag(n, strings.TrimPrefix(name, "--"))
				require.NotNil(t, f, "reference.md:%d: `onceledger %s` has no flag %s", r.line, section, name)
				envs = append(envs, f.Envs...)
			}
			for _, env := range r.envs {
				require.Contains(t, envs, env, "reference.md:%d: %s is not the variable of %v", r.line, env, r.flags)
			}
		}
	}
}

func findFlag(n *kong.Node, name string) *kong.Flag {
	for _, f := range n.Flags {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// TestReferenceVariablesExist: every ONCELEDGER_* variable the page names
// anywhere is one onceledger knows (knownVariables: the command line's,
// the provider registry's and the tools' of toolVariables), which is the
// set it accepts at start.
func TestReferenceVariablesExist(t *testing.T) {
	b, err := os.ReadFile(referencePath)
	require.NoError(t, err)
	known := knownVariables(cliModel(t))
	for _, v := range regexp.MustCompile(`ONCELEDGER_[A-Z0-9_]+`).FindAllString(string(b), -1) {
		require.True(t, known[v], "docs/reference.md names %s, which neither the command line, the provider registry nor toolVariables (cmd/onceledger/environment.go) has", v)
	}
}

// repositoryFiles are the texts of the repository's Go files, scripts,
// makefiles and CI script (not its documentation), by path.
func repositoryFiles(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "docs" || d.Name() == ".devdb") {
			return filepath.SkipDir
		}
		name := d.Name()
		if !d.IsDir() && (strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".sh") ||
			strings.HasSuffix(name, ".mk") || name == "Makefile" || filepath.Base(filepath.Dir(path)) == ".ci") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out[path] = string(b)
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// appRouter is the router serve's app builds. The app opens no connection
// until it is used, so an address where nothing answers is enough.
func appRouter(t *testing.T) *mux.Router {
	t.Helper()
	a, err := app.New(context.Background(), app.Config{
		DatabaseURL: "postgres://postgres@127.0.0.1:1/onceledger?sslmode=disable&connect_timeout=1",
	})
	require.NoError(t, err)
	t.Cleanup(a.Close)
	r, ok := a.Handler().(*mux.Router)
	require.True(t, ok, "the app's handler is no longer a gorilla/mux router: walk the router it wraps")
	return r
}

// appRoute is one route of the router: methods none = any (a prefix
// another handler serves, such as the console).
type appRoute struct {
	methods []string
	path    string
}

func walkRoutes(t *testing.T, r *mux.Router) []appRoute {
	t.Helper()
	var out []appRoute
	err := r.Walk(func(rt *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		path, err := rt.GetPathTemplate()
		if err != nil {
			return nil //nolint:nilerr // a route matched by other than a path
		}
		methods, _ := rt.GetMethods()
		// A subrouter's own route, or a catch-all prefix answering 404.
		if len(methods) == 0 && (rt.GetHandler() == nil || strings.HasSuffix(path, "/")) {
			return nil
		}
		out = append(out, appRoute{methods: methods, path: path})
		return nil
	})
	require.NoError(t, err)
	return out
}

var pathParam = regexp.MustCompile(`\{[^}]*\}`)

// samePath compares route templates whatever their parameters are called
// (the page says {YYYY-MM} where the router says {period}).
func samePath(a, b string) bool {
	return pathParam.ReplaceAllString(a, "{}") == pathParam.ReplaceAllString(b, "{}")
}

func TestReferenceDocumentsEveryRoute(t *testing.T) {
	ref := parseReference(t)
	for _, rt := range walkRoutes(t, appRouter(t)) {
		documented := func(method string) bool {
			return slices.ContainsFunc(ref.routes, func(d docRoute) bool {
				return samePath(d.path, rt.path) && (method == "" || d.method == method)
			})
		}
		if len(rt.methods) == 0 {
			require.True(t, documented(""), "route %s (any method) is not documented in docs/reference.md", rt.path)
		}
		for _, m := range rt.methods {
			require.True(t, documented(m), "route `%s %s` is not documented in docs/reference.md", m, rt.path)
		}
	}
	// The console is a handler of its own under a prefix route: its
	// patterns are read from its source.
	for _, p := range consolePatterns(t) {
		found := slices.ContainsFunc(ref.routes, func(d docRoute) bool {
			if strings.HasSuffix(p.path, "/") { // a subtree
				return d.method == p.method && strings.HasPrefix(d.path, p.path)
			}
			return d.method == p.method && samePath(d.path, p.path)
		})
		require.True(t, found, "console route `%s %s` is not documented in docs/reference.md", p.method, p.path)
	}
}

// consolePatterns are the method-qualified net/http patterns the console
// registers ("GET /console/payments"), read from adapters/console.
func consolePatterns(t *testing.T) []docRoute {
	t.Helper()
	files, err := filepath.Glob("../../adapters/console/*.go")
	require.NoError(t, err)
	pattern := regexp.MustCompile(`Handle(?:Func)?\("(GET|HEAD|POST|PUT|PATCH|DELETE) (/console[^"]*)"`)
	var out []docRoute
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range pattern.FindAllStringSubmatch(string(b), -1) {
			if !strings.Contains(m[2], "{$}") {
				out = append(out, docRoute{method: m[1], path: m[2]})
			}
		}
	}
	return out
}

// TestReferenceRoutesExist: every documented route is one the router
// has, or one a prefix route's handler serves (the console): then the
// app's handler must not answer it 404 or 405.
func TestReferenceRoutesExist(t *testing.T) {
	ref := parseReference(t)
	r := appRouter(t)
	routes := walkRoutes(t, r)
	for _, d := range ref.routes {
		if slices.ContainsFunc(routes, func(rt appRoute) bool {
			return samePath(rt.path, d.path) && slices.Contains(rt.methods, d.method)
		}) {
			continue
		}
		under := slices.ContainsFunc(routes, func(rt appRoute) bool {
			return len(rt.methods) == 0 && (d.path == rt.path || strings.HasPrefix(d.path, rt.path+"/"))
		})
		require.True(t, under, "reference.md:%d: the router has no route `%s %s`", d.line, d.method, d.path)
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(d.method, pathParam.ReplaceAllString(d.path, "x"), nil))
		require.NotContains(t, []int{http.StatusNotFound, http.StatusMethodNotAllowed}, w.Code,
			"reference.md:%d: `%s %s` answers %d", d.line, d.method, d.path, w.Code)
	}
}

// TestReferenceHasNoDuplicates is a guard against the page's tables drifting
// into duplicates: a command, flag row or route defined twice is a mistake.
func TestReferenceHasNoDuplicates(t *testing.T) {
	ref := parseReference(t)
	seen := map[string]int{}
	for _, d := range ref.routes {
		k := d.method + " " + pathParam.ReplaceAllString(d.path, "{}")
		require.Zero(t, seen[k], "reference.md:%d: route %s is already defined at line %d", d.line, k, seen[k])
		seen[k] = d.line
	}
	for section, rows := range ref.flags {
		var names []string
		for _, r := range rows {
			names = append(names, r.flags...)
		}
		sort.Strings(names)
		require.Equal(t, slices.Compact(slices.Clone(names)), names, "a flag of `onceledger %s` is documented twice", section)
	}
}
