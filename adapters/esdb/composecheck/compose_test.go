package composecheck

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// repoRoot walks up from the package directory to the module root.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

func loadProject(t *testing.T, env []string) *types.Project {
	t.Helper()
	root := repoRoot(t)
	opts, err := cli.NewProjectOptions(
		[]string{filepath.Join(root, "docker-compose.yml")},
		cli.WithWorkingDirectory(root),
		cli.WithEnv(env), // not the OS environment: the test must not depend on the shell
	)
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker-compose.yml does not load: %v", err)
	}
	return p
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, err := p.GetService(name)
	if err != nil {
		t.Fatalf("service %q: %v", name, err)
	}
	return s
}

func env(t *testing.T, s types.ServiceConfig, key string) string {
	t.Helper()
	v, ok := s.Environment[key]
	if !ok || v == nil || *v == "" {
		t.Fatalf("service %s: environment %s is not set", s.Name, key)
	}
	return *v
}

func wantHealthcheck(t *testing.T, s types.ServiceConfig, contains string) {
	t.Helper()
	hc := s.HealthCheck
	if hc == nil || hc.Disable || len(hc.Test) < 2 {
		t.Fatalf("service %s has no healthcheck", s.Name)
	}
	if hc.Test[0] != "CMD" && hc.Test[0] != "CMD-SHELL" {
		t.Fatalf("service %s healthcheck test %v: want CMD or CMD-SHELL", s.Name, hc.Test)
	}
	if !strings.Contains(strings.Join(hc.Test[1:], " "), contains) {
		t.Errorf("service %s healthcheck %v does not mention %q", s.Name, hc.Test, contains)
	}
	if hc.Interval == nil || hc.Timeout == nil || hc.Retries == nil || *hc.Retries == 0 {
		t.Errorf("service %s healthcheck needs interval, timeout and retries: %+v", s.Name, hc)
	}
}

func wantPort(t *testing.T, s types.ServiceConfig, target uint32) {
	t.Helper()
	for _, p := range s.Ports {
		if p.Target == target && p.Published != "" {
			return
		}
	}
	t.Errorf("service %s does not publish container port %d: %+v", s.Name, target, s.Ports)
}

func wantVolume(t *testing.T, p *types.Project, s types.ServiceConfig, target string) {
	t.Helper()
	for _, v := range s.Volumes {
		if v.Target == target {
			if v.Type == types.VolumeTypeVolume {
				if _, ok := p.Volumes[v.Source]; !ok {
					t.Errorf("service %s mounts undeclared volume %q", s.Name, v.Source)
				}
			}
			return
		}
	}
	t.Errorf("service %s has no volume at %s", s.Name, target)
}

func TestComposeFile(t *testing.T) {
	p := loadProject(t, nil)

	names := p.ServiceNames()
	for _, want := range []string{"kurrentdb", "postgres", "onceledger"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Fatalf("services %v lack %q", names, want)
		}
	}

	kdb := service(t, p, "kurrentdb")
	if !strings.Contains(kdb.Image, "kurrentdb") && !strings.HasPrefix(kdb.Image, "eventstore/eventstore:") {
		t.Errorf("kurrentdb image %q is neither KurrentDB nor EventStoreDB", kdb.Image)
	}
	insecure := kdb.Environment["KURRENTDB_INSECURE"]
	if insecure == nil {
		insecure = kdb.Environment["EVENTSTORE_INSECURE"]
	}
	if insecure == nil || *insecure != "true" {
		t.Errorf("kurrentdb must run insecure (the app connects with tls=false)")
	}
	proj := kdb.Environment["KURRENTDB_RUN_PROJECTIONS"]
	if proj == nil {
		proj = kdb.Environment["EVENTSTORE_RUN_PROJECTIONS"]
	}
	if proj == nil || *proj != "None" {
		t.Errorf("kurrentdb RUN_PROJECTIONS should be None")
	}
	wantPort(t, kdb, 2113)
	wantHealthcheck(t, kdb, "2113")
	wantVolume(t, p, kdb, "/var/lib/kurrentdb")

	pg := service(t, p, "postgres")
	if !strings.HasPrefix(pg.Image, "postgres:16") {
		t.Errorf("postgres image %q, want postgres:16", pg.Image)
	}
	if env(t, pg, "POSTGRES_DB") != "onceledger" {
		t.Errorf("POSTGRES_DB should be onceledger")
	}
	if pw := pg.Environment["POSTGRES_PASSWORD"]; pw == nil || *pw == "" {
		if m := pg.Environment["POSTGRES_HOST_AUTH_METHOD"]; m == nil || *m != "trust" {
			t.Errorf("postgres needs POSTGRES_PASSWORD or trust auth to start")
		}
	}
	wantHealthcheck(t, pg, "pg_isready")
	wantVolume(t, p, pg, "/var/lib/postgresql/data")

	app := service(t, p, "onceledger")
	if app.Build == nil || app.Build.Context == "" {
		t.Fatal("onceledger must be built from the repository")
	}
	if df := app.Build.Dockerfile; df != "" && filepath.Base(df) != "Dockerfile" {
		t.Errorf("onceledger builds from %q, want Dockerfile", df)
	}
	if len(app.Command) != 1 || app.Command[0] != "serve" {
		t.Errorf("onceledger command %v, want [serve]", app.Command)
	}
	wantPort(t, app, 8080)
	wantHealthcheck(t, app, "/healthz")
	if addr := env(t, app, "ONCELEDGER_ADDR"); !strings.HasSuffix(addr, ":8080") {
		t.Errorf("ONCELEDGER_ADDR %q does not listen on 8080", addr)
	}
	es := env(t, app, "ONCELEDGER_EVENT_STORE")
	if !strings.HasPrefix(es, "esdb://kurrentdb:2113") || !strings.Contains(es, "tls=false") {
		t.Errorf("ONCELEDGER_EVENT_STORE %q, want esdb://kurrentdb:2113?tls=false", es)
	}
	db := env(t, app, "ONCELEDGER_DATABASE_URL")
	if !regexp.MustCompile(`^postgres(ql)?://[^@]+@postgres:5432/onceledger\?sslmode=disable$`).MatchString(db) {
		t.Errorf("ONCELEDGER_DATABASE_URL %q does not point at the postgres service's onceledger database", db)
	}
	// The password in the URL must be the one the postgres service uses.
	if pw := pg.Environment["POSTGRES_PASSWORD"]; pw != nil && *pw != "" && !strings.Contains(db, ":"+*pw+"@") {
		t.Errorf("ONCELEDGER_DATABASE_URL %q does not carry POSTGRES_PASSWORD", db)
	}
	for _, dep := range []string{"kurrentdb", "postgres"} {
		d, ok := app.DependsOn[dep]
		if !ok {
			t.Errorf("onceledger does not depend on %s", dep)
			continue
		}
		if d.Condition != types.ServiceConditionHealthy {
			t.Errorf("onceledger depends on %s with condition %q, want %s", dep, d.Condition, types.ServiceConditionHealthy)
		}
	}
}

// The password is one setting: overriding it changes both services.
func TestComposePasswordInterpolation(t *testing.T) {
	p := loadProject(t, []string{"POSTGRES_PASSWORD=s3cret"})
	pg := service(t, p, "postgres")
	app := service(t, p, "onceledger")
	if env(t, pg, "POSTGRES_PASSWORD") != "s3cret" {
		t.Fatalf("POSTGRES_PASSWORD not taken from the environment")
	}
	if db := env(t, app, "ONCELEDGER_DATABASE_URL"); !strings.Contains(db, ":s3cret@postgres:5432/") {
		t.Fatalf("ONCELEDGER_DATABASE_URL %q ignores POSTGRES_PASSWORD", db)
	}
}

// instruction is one Dockerfile instruction, continuation lines joined;
// heredoc bodies are skipped.
type instruction struct {
	cmd  string // upper case
	args string
}

func dockerfile(t *testing.T) []instruction {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
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
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDockerfile(t *testing.T) {
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
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, got stages %v", froms)
	}
	if !strings.HasPrefix(froms[0], "golang:1.26") {
		t.Errorf("builder stage %q, want golang:1.26", froms[0])
	}
	last := froms[len(froms)-1]
	if !strings.HasPrefix(last, "gcr.io/distroless/static") && !strings.HasPrefix(last, "scratch") {
		t.Errorf("runtime stage %q, want distroless static or scratch", last)
	}

	all := func(cmd string) string {
		var parts []string
		for _, in := range ins {
			if in.cmd == cmd {
				parts = append(parts, in.args)
			}
		}
		return strings.Join(parts, "\n")
	}
	if !strings.Contains(all("ENV")+all("RUN"), "CGO_ENABLED=0") {
		t.Error("the build must set CGO_ENABLED=0 (static binary for distroless)")
	}
	if !strings.Contains(all("RUN"), "./cmd/onceledger") {
		t.Error("the build must compile ./cmd/onceledger")
	}

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
	if !strings.HasSuffix(last, ":nonroot") && !strings.HasPrefix(user, "65532") && user != "nonroot" {
		t.Errorf("runtime must run as non-root (USER 65532 or a :nonroot image); USER %q", user)
	}
	if strings.HasPrefix(user, "0") || user == "root" {
		t.Errorf("runtime runs as root")
	}
	if !strings.Contains(expose, "8080") {
		t.Errorf("EXPOSE %q, want 8080", expose)
	}
	if entrypoint != `["/onceledger"]` {
		t.Errorf(`ENTRYPOINT %s, want ["/onceledger"]`, entrypoint)
	}
	if !copied["/onceledger"] {
		t.Error("the runtime stage does not copy /onceledger")
	}
	// The compose healthcheck runs a binary the image must contain.
	app := service(t, loadProject(t, nil), "onceledger")
	if hc := app.HealthCheck; hc != nil && hc.Test[0] == "CMD" && strings.HasPrefix(hc.Test[1], "/") && !copied[hc.Test[1]] {
		t.Errorf("compose healthcheck runs %s, which the runtime stage does not copy", hc.Test[1])
	}
	if hc := app.HealthCheck; hc != nil && hc.Test[0] == "CMD-SHELL" && strings.Contains(last, "distroless") {
		t.Error("CMD-SHELL healthcheck on a distroless image: there is no shell")
	}
}

// The build context must keep what the build needs.
func TestDockerignore(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		pat := strings.TrimSpace(line)
		if pat == "" || strings.HasPrefix(pat, "#") || strings.HasPrefix(pat, "!") {
			continue
		}
		for _, needed := range []string{"go.mod", "go.sum", "cmd/onceledger/main.go", "migrations/00001_foundation.sql", "domain/money/money.go"} {
			if ok, _ := filepath.Match(pat, needed); ok || pat == needed || strings.HasPrefix(needed, strings.TrimSuffix(pat, "/")+"/") {
				t.Errorf(".dockerignore pattern %q excludes %s, which the build needs", pat, needed)
			}
		}
	}
}
