package main

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	composecli "github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The deployment files at the repository root (docker-compose.yml,
// Dockerfile, .dockerignore) are checked here, beside the binary they
// deploy, without a container engine: the compose file is loaded with the
// compose-spec reference loader (compose-go, the library `docker compose`
// itself uses) and checked for what `docker compose up` relies on: services,
// ports, healthchecks, start order, and an onceledger environment that the
// serve command understands.

// composeRepoRoot walks up from the package directory to the module root.
func composeRepoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "go.mod not found above the test directory")
		dir = parent
	}
}

func loadComposeProject(t *testing.T, env []string) *types.Project {
	t.Helper()
	root := composeRepoRoot(t)
	opts, err := composecli.NewProjectOptions(
		[]string{filepath.Join(root, "docker-compose.yml")},
		composecli.WithWorkingDirectory(root),
		composecli.WithEnv(env), // not the OS environment: the test must not depend on the shell
	)
	require.NoError(t, err)
	p, err := opts.LoadProject(context.Background())
	require.NoError(t, err, "docker-compose.yml does not load")
	return p
}

func composeService(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, err := p.GetService(name)
	require.NoError(t, err, "service %q", name)
	return s
}

func composeEnv(t *testing.T, s types.ServiceConfig, key string) string {
	t.Helper()
	v, ok := s.Environment[key]
	require.True(t, ok && v != nil && *v != "", "service %s: environment %s is not set", s.Name, key)
	return *v
}

func wantHealthcheck(t *testing.T, s types.ServiceConfig, contains string) {
	t.Helper()
	hc := s.HealthCheck
	require.True(t, hc != nil && !hc.Disable && len(hc.Test) >= 2, "service %s has no healthcheck", s.Name)
	require.Contains(t, []string{"CMD", "CMD-SHELL"}, hc.Test[0], "service %s healthcheck test %v: want CMD or CMD-SHELL", s.Name, hc.Test)
	assert.Contains(t, strings.Join(hc.Test[1:], " "), contains, "service %s healthcheck %v does not mention %q", s.Name, hc.Test, contains)
	assert.True(t, hc.Interval != nil && hc.Timeout != nil && hc.Retries != nil && *hc.Retries != 0,
		"service %s healthcheck needs interval, timeout and retries: %+v", s.Name, hc)
}

func wantPort(t *testing.T, s types.ServiceConfig, target uint32) {
	t.Helper()
	published := slices.ContainsFunc(s.Ports, func(p types.ServicePortConfig) bool {
		return p.Target == target && p.Published != ""
	})
	assert.True(t, published, "service %s does not publish container port %d: %+v", s.Name, target, s.Ports)
}

func wantVolume(t *testing.T, p *types.Project, s types.ServiceConfig, target string) {
	t.Helper()
	i := slices.IndexFunc(s.Volumes, func(v types.ServiceVolumeConfig) bool { return v.Target == target })
	if !assert.GreaterOrEqual(t, i, 0, "service %s has no volume at %s", s.Name, target) {
		return
	}
	if v := s.Volumes[i]; v.Type == types.VolumeTypeVolume {
		assert.Contains(t, p.Volumes, v.Source, "service %s mounts undeclared volume %q", s.Name, v.Source)
	}
}

func TestComposeFile(t *testing.T) {
	p := loadComposeProject(t, nil)

	names := p.ServiceNames()
	for _, want := range []string{"kurrentdb", "postgres", "onceledger"} {
		require.Contains(t, names, want, "services %v lack %q", names, want)
	}

	kdb := composeService(t, p, "kurrentdb")
	assert.True(t, strings.Contains(kdb.Image, "kurrentdb") || strings.HasPrefix(kdb.Image, "eventstore/eventstore:"),
		"kurrentdb image %q is neither KurrentDB nor EventStoreDB", kdb.Image)
	insecure := kdb.Environment["KURRENTDB_INSECURE"]
	if insecure == nil {
		insecure = kdb.Environment["EVENTSTORE_INSECURE"]
	}
	assert.True(t, insecure != nil && *insecure == "true", "kurrentdb must run insecure (the app connects with tls=false)")
	proj := kdb.Environment["KURRENTDB_RUN_PROJECTIONS"]
	if proj == nil {
		proj = kdb.Environment["EVENTSTORE_RUN_PROJECTIONS"]
	}
	assert.True(t, proj != nil && *proj == "None", "kurrentdb RUN_PROJECTIONS should be None")
	wantPort(t, kdb, 2113)
	wantHealthcheck(t, kdb, "2113")
	wantVolume(t, p, kdb, "/var/lib/kurrentdb")

	pg := composeService(t, p, "postgres")
	assert.True(t, strings.HasPrefix(pg.Image, "postgres:16"), "postgres image %q, want postgres:16", pg.Image)
	assert.Equal(t, "onceledger", composeEnv(t, pg, "POSTGRES_DB"), "POSTGRES_DB should be onceledger")
	if pw := pg.Environment["POSTGRES_PASSWORD"]; pw == nil || *pw == "" {
		m := pg.Environment["POSTGRES_HOST_AUTH_METHOD"]
		assert.True(t, m != nil && *m == "trust", "postgres needs POSTGRES_PASSWORD or trust auth to start")
	}
	wantHealthcheck(t, pg, "pg_isready")
	wantVolume(t, p, pg, "/var/lib/postgresql/data")
	// The compose database runs with the settings the benchmarks measure
	// with (docs/postgres.conf, the private cluster of bench/run.sh): one
	// list may not drift from the other.
	conf, err := os.ReadFile(filepath.Join(composeRepoRoot(t), "docs", "postgres.conf"))
	require.NoError(t, err)
	var settings []string
	for _, line := range strings.Split(string(conf), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		require.True(t, ok, "docs/postgres.conf: %q is not name = value", line)
		settings = append(settings, "-c", strings.TrimSpace(name)+"="+strings.TrimSpace(value))
	}
	require.NotEmpty(t, settings, "docs/postgres.conf sets nothing")
	assert.Equal(t, append([]string{"postgres"}, settings...), []string(pg.Command),
		"the postgres service's command should be postgres with docs/postgres.conf's settings, in its order")

	app := composeService(t, p, "onceledger")
	require.True(t, app.Build != nil && app.Build.Context != "", "onceledger must be built from the repository")
	if df := app.Build.Dockerfile; df != "" {
		assert.Equal(t, "Dockerfile", filepath.Base(df), "onceledger builds from %q, want Dockerfile", df)
	}
	assert.Equal(t, types.ShellCommand{"serve"}, app.Command, "onceledger command %v, want [serve]", app.Command)
	wantPort(t, app, 8080)
	wantHealthcheck(t, app, "/healthz")
	addr := composeEnv(t, app, "ONCELEDGER_ADDR")
	assert.True(t, strings.HasSuffix(addr, ":8080"), "ONCELEDGER_ADDR %q does not listen on 8080", addr)
	es := composeEnv(t, app, "ONCELEDGER_EVENT_STORE")
	assert.True(t, strings.HasPrefix(es, "esdb://kurrentdb:2113") && strings.Contains(es, "tls=false"),
		"ONCELEDGER_EVENT_STORE %q, want esdb://kurrentdb:2113?tls=false", es)
	db := composeEnv(t, app, "ONCELEDGER_DATABASE_URL")
	assert.Regexp(t, `^postgres(ql)?://[^@]+@postgres:5432/onceledger\?sslmode=disable$`, db,
		"ONCELEDGER_DATABASE_URL %q does not point at the postgres service's onceledger database", db)
	// The password in the URL must be the one the postgres service uses.
	if pw := pg.Environment["POSTGRES_PASSWORD"]; pw != nil && *pw != "" {
		assert.Contains(t, db, ":"+*pw+"@", "ONCELEDGER_DATABASE_URL %q does not carry POSTGRES_PASSWORD", db)
	}
	for _, dep := range []string{"kurrentdb", "postgres"} {
		d, ok := app.DependsOn[dep]
		if !assert.True(t, ok, "onceledger does not depend on %s", dep) {
			continue
		}
		assert.Equal(t, types.ServiceConditionHealthy, d.Condition,
			"onceledger depends on %s with condition %q, want %s", dep, d.Condition, types.ServiceConditionHealthy)
	}
}

// serveEnvNames is every environment variable the command `name` reads, its
// own flags and the global ones, as kong models them from the struct tags of
// cli: the same model `onceledger` parses its configuration with, so an
// embedded or regrouped configuration struct is followed as kong follows it.
func serveEnvNames(t *testing.T, name string) map[string]bool {
	t.Helper()
	k, err := kong.New(newCLI(), kong.Name("onceledger"))
	require.NoError(t, err, "kong cannot model the onceledger configuration")
	i := slices.IndexFunc(k.Model.Children, func(n *kong.Node) bool { return n.Name == name })
	require.GreaterOrEqual(t, i, 0, "onceledger has no command %q", name)
	known := map[string]bool{}
	for _, group := range k.Model.Children[i].AllFlags(false) {
		for _, f := range group {
			for _, e := range f.Envs {
				known[e] = true
			}
		}
	}
	require.NotEmpty(t, known, "onceledger %s reads no environment variables", name)
	return known
}

// A misspelt variable in the compose file is silently ignored by kong: the
// service would start with the default instead.
func TestComposeEnvironmentKnownToServe(t *testing.T) {
	app := composeService(t, loadComposeProject(t, nil), "onceledger")
	require.NotEmpty(t, app.Command, "onceledger has no command")
	known := serveEnvNames(t, app.Command[0])
	var set []string
	for key := range app.Environment {
		if strings.HasPrefix(key, "ONCELEDGER_") {
			set = append(set, key)
		}
	}
	sort.Strings(set)
	require.NotEmpty(t, set, "the onceledger service sets no ONCELEDGER_ variables")
	for _, key := range set {
		assert.True(t, known[key], "docker-compose.yml sets %s, which `onceledger %s` does not read", key, app.Command[0])
	}
}

// The password is one setting: overriding it changes both services.
func TestComposePasswordInterpolation(t *testing.T) {
	p := loadComposeProject(t, []string{"POSTGRES_PASSWORD=s3cret"})
	pg := composeService(t, p, "postgres")
	app := composeService(t, p, "onceledger")
	require.Equal(t, "s3cret", composeEnv(t, pg, "POSTGRES_PASSWORD"), "POSTGRES_PASSWORD not taken from the environment")
	db := composeEnv(t, app, "ONCELEDGER_DATABASE_URL")
	require.Contains(t, db, ":s3cret@postgres:5432/", "ONCELEDGER_DATABASE_URL %q ignores POSTGRES_PASSWORD", db)
}

// instruction is one Dockerfile instruction, continuation lines joined;
// heredoc bodies are skipped.
type instruction struct {
	cmd  string // upper case
	args string
}

func dockerfile(t *testing.T) []instruction {
	t.Helper()
	f, err := os.Open(filepath.Join(composeRepoRoot(t), "Dockerfile"))
	require.NoError(t, err)
	defer f.Close()
	var out []instruction
	var pending, heredoc string
	sc := bufio.NewScanner(f)
	heredocRE := regexp.MustCompile(`<<-?'?"?([A-Z]+)'?"?`)
	for sc.Scan() {
		line := sc.Text()
		if heredoc != "" {
			if strings.TrimSpace(line) == heredoc {
				heredoc = ""
			}
			continue
		}
		trimmed := strings.TrimSpace(line)
		if pending == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			pending += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		full := pending + trimmed
		pending = ""
		cmd, args, _ := strings.Cut(full, " ")
		out = append(out, instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
		if m := heredocRE.FindStringSubmatch(full); m != nil {
			heredoc = m[1]
		}
	}
	require.NoError(t, sc.Err())
	return out
}

func TestComposeDockerfile(t *testing.T) {
	ins := dockerfile(t)
	var froms []string
	var final []instruction // instructions of the last stage
	for _, in := range ins {
		if in.cmd == "FROM" {
			froms = append(froms, in.args)
			final = nil
		}
		final = append(final, in)
	}
	require.GreaterOrEqual(t, len(froms), 2, "want a multi-stage build, got stages %v", froms)
	assert.True(t, strings.HasPrefix(froms[0], "golang:1.26"), "builder stage %q, want golang:1.26", froms[0])
	last := froms[len(froms)-1]
	assert.True(t, strings.HasPrefix(last, "gcr.io/distroless/static") || strings.HasPrefix(last, "scratch"),
		"runtime stage %q, want distroless static or scratch", last)

	all := func(cmd string) string {
		var parts []string
		for _, in := range ins {
			if in.cmd == cmd {
				parts = append(parts, in.args)
			}
		}
		return strings.Join(parts, "\n")
	}
	assert.Contains(t, all("ENV")+all("RUN"), "CGO_ENABLED=0", "the build must set CGO_ENABLED=0 (static binary for distroless)")
	assert.Contains(t, all("RUN"), "./cmd/onceledger", "the build must compile ./cmd/onceledger")

	var user, expose, entrypoint string
	copied := map[string]bool{}
	for _, in := range final {
		switch in.cmd {
		case "USER":
			user = in.args
		case "EXPOSE":
			expose = in.args
		case "ENTRYPOINT":
			entrypoint = in.args
		case "COPY":
			f := strings.Fields(in.args)
			copied[f[len(f)-1]] = true
		}
	}
	assert.True(t, strings.HasSuffix(last, ":nonroot") || strings.HasPrefix(user, "65532") || user == "nonroot",
		"runtime must run as non-root (USER 65532 or a :nonroot image); USER %q", user)
	assert.False(t, strings.HasPrefix(user, "0") || user == "root", "runtime runs as root")
	assert.Contains(t, expose, "8080", "EXPOSE %q, want 8080", expose)
	assert.Equal(t, `["/onceledger"]`, entrypoint, `ENTRYPOINT %s, want ["/onceledger"]`, entrypoint)
	assert.True(t, copied["/onceledger"], "the runtime stage does not copy /onceledger")
	// The compose healthcheck runs a binary the image must contain.
	app := composeService(t, loadComposeProject(t, nil), "onceledger")
	if hc := app.HealthCheck; hc != nil && hc.Test[0] == "CMD" && strings.HasPrefix(hc.Test[1], "/") {
		assert.True(t, copied[hc.Test[1]], "compose healthcheck runs %s, which the runtime stage does not copy", hc.Test[1])
	}
	if hc := app.HealthCheck; hc != nil && hc.Test[0] == "CMD-SHELL" {
		assert.NotContains(t, last, "distroless", "CMD-SHELL healthcheck on a distroless image: there is no shell")
	}
}

// The build context must keep what the build needs.
func TestComposeDockerignore(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(composeRepoRoot(t), ".dockerignore"))
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		pat := strings.TrimSpace(line)
		if pat == "" || strings.HasPrefix(pat, "#") || strings.HasPrefix(pat, "!") {
			continue
		}
		for _, needed := range []string{"go.mod", "go.sum", "cmd/onceledger/main.go", "migrations/00001_foundation.sql", "domain/money/money.go"} {
			ok, _ := filepath.Match(pat, needed)
			excluded := ok || pat == needed || strings.HasPrefix(needed, strings.TrimSuffix(pat, "/")+"/")
			assert.False(t, excluded, ".dockerignore pattern %q excludes %s, which the build needs", pat, needed)
		}
	}
}
