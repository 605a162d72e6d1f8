package chaos

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
)

// binDir holds the onceledger binary built for this test run.
var binDir string

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "onceledger-chaos-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos: temp dir:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		binDir = dir
		return m.Run()
	}())
}

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// serverBinary returns the path of the onceledger binary, built once per run
// (without -race: the server is the system under test, not this package), or
// ONCELEDGER_CHAOS_SERVER_BIN when set (make chaos builds it once).
func serverBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("ONCELEDGER_CHAOS_SERVER_BIN"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		out := filepath.Join(binDir, "onceledger")
		cmd := exec.Command(goBin, "build", "-o", out, "github.com/onceledger/onceledger/cmd/onceledger")
		if msg, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/onceledger: %v\n%s", err, msg)
			return
		}
		buildPath = out
	})
	require.NoError(t, buildErr)
	return buildPath
}

// scale multiplies every scenario's load: ONCELEDGER_CHAOS_SCALE, default 1.
func scale(t *testing.T) int {
	t.Helper()
	s := os.Getenv("ONCELEDGER_CHAOS_SCALE")
	if s == "" {
		return 1
	}
	n, err := strconv.Atoi(s)
	require.True(t, err == nil && n >= 1 && n <= 1000, "ONCELEDGER_CHAOS_SCALE=%q: want an integer in 1..1000", s)
	return n
}

// chaosRun is the opening the single-server chaos tests share: serve over a
// fresh database of its own (projecting or not), the test's pool on that
// database, the load scale, the test's deadline and when it began.
type chaosRun struct {
	start time.Time
	ctx   context.Context
	k     int
	srv   *server
	pool  *pgxpool.Pool
}

// beginChaos skips under -short, else starts serve and connects; the
// caller defers the returned cancel, which ends the run's context.
func beginChaos(t *testing.T, limit time.Duration, projections bool) (*chaosRun, context.CancelFunc) {
	t.Helper()
	if testing.Short() {
		t.Skip("chaos: skipped in -short mode")
	}
	r := &chaosRun{start: time.Now()}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	r.ctx = ctx
	t.Cleanup(cancel) // should the opening fail; the caller's defer comes first otherwise
	r.k = scale(t)
	dbURL := pgtest.UnusedDatabaseURL(t)
	r.srv = newServer(t, dbURL, newSecrets(t), projections)
	r.srv.start()
	r.pool = openPool(t, dbURL)
	return r, cancel
}

// loggedSeed is a fresh workload seed, logged so that a failing run can be
// replayed.
func loggedSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return seed
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err, "free port")
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// secrets are the credentials one test's server and sender share.
type secrets struct {
	standard string // whsec_<base64>
	apiToken string
}

func newSecrets(t *testing.T) secrets {
	t.Helper()
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	return secrets{
		standard: "whsec_" + base64.StdEncoding.EncodeToString(key),
		apiToken: "chaos-" + randomHex(t, 12),
	}
}

// server is one `onceledger serve` child process, restartable on the same
// port so the sender's URL survives a crash. Its process group is killed at
// cleanup whatever happens to the test.
type server struct {
	t           *testing.T
	bin         string
	addr        string
	dbURL       string
	sec         secrets
	projections bool
	logPath     string
	// env is added to serve's environment at the next start.
	env []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	starts int
}

func newServer(t *testing.T, dbURL string, sec secrets, projections bool) *server {
	t.Helper()
	s := &server{
		t:           t,
		bin:         serverBinary(t),
		addr:        fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		dbURL:       dbURL,
		sec:         sec,
		projections: projections,
		logPath:     filepath.Join(t.TempDir(), "serve.log"),
	}
	t.Cleanup(func() {
		s.kill9()
		if t.Failed() {
			t.Logf("last lines of the server log %s:\n%s", s.logPath, tail(s.logPath, 40))
		}
	})
	return s
}

func (s *server) url(path string) string { return "http://" + s.addr + path }

// start launches serve and waits until /healthz answers.
func (s *server) start() {
	s.t.Helper()
	require.NoError(s.t, s.launch())
	s.waitHealthy(90 * time.Second)
}

// launch starts the process under the lock, which it releases before the
// caller can fail the test.
func (s *server) launch() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("server already running")
	}
	s.starts++
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "=== chaos: start #%d (projections=%v) at %s\n", s.starts, s.projections, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(s.bin, "serve")
	cmd.Env = append(withoutOnceledgerEnv(os.Environ()),
		"ONCELEDGER_DATABASE_URL="+s.dbURL,
		"ONCELEDGER_ADDR="+s.addr,
		"ONCELEDGER_STANDARD_SECRETS="+s.sec.standard,
		"ONCELEDGER_API_TOKENS="+s.sec.apiToken,
		"ONCELEDGER_PROJECTIONS="+strconv.FormatBool(s.projections),
		"ONCELEDGER_SHUTDOWN_TIMEOUT=20s",
		// Warnings and errors only: the tail shown on failure is what went wrong.
		"ONCELEDGER_LOG_LEVEL=warn",
	)
	cmd.Env = append(cmd.Env, s.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group: kill -9 reaches anything serve might spawn, and a
	// signal to the test's group never reaches serve by accident.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start serve: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	s.cmd, s.done = cmd, done
	return nil
}

func (s *server) waitHealthy(limit time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(limit)
	client := &http.Client{Timeout: 2 * time.Second}
	for time.Now().Before(deadline) {
		s.mu.Lock()
		done := s.done
		s.mu.Unlock()
		select {
		case <-done:
			require.Fail(s.t, "serve exited during start", tail(s.logPath, 40))
		default:
		}
		resp, err := client.Get(s.url("/healthz"))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.Fail(s.t, fmt.Sprintf("serve not healthy after %v", limit), tail(s.logPath, 40))
}

// kill9 sends SIGKILL to serve's process group and waits for it to die. A
// no-op when it is not running.
func (s *server) kill9() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
	s.cmd, s.done = nil, nil
}

// alive reports whether the process started last is still running.
func (s *server) alive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// errFailpointPending: serve has not exited yet.
var errFailpointPending = errors.New("serve still running")

// exitCode returns the exit status of serve once it has exited by itself
// (-1 while it runs), and forgets the process so that start can run again.
func (s *server) exitCode() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return -1
	}
	select {
	case <-s.done:
	default:
		return -1
	}
	code := s.cmd.ProcessState.ExitCode()
	s.cmd, s.done = nil, nil
	return code
}

// stop sends SIGTERM (graceful drain) and waits; it fails the test if serve
// does not exit in time or exits with an error.
func (s *server) stop() {
	s.t.Helper()
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(40 * time.Second):
		s.kill9()
		require.Fail(s.t, "serve did not stop within 40s of SIGTERM")
	}
	s.mu.Lock()
	s.cmd, s.done = nil, nil
	s.mu.Unlock()
	code := cmd.ProcessState.ExitCode()
	assert.Zero(s.t, code, "serve exited with code %d after SIGTERM:\n%s", code, tail(s.logPath, 20))
}

func withoutOnceledgerEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "ONCELEDGER_") {
			out = append(out, kv)
		}
	}
	return out
}

// tail returns the last n lines of a file, for failure messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// eventually polls cond every interval until it returns nil or limit passes,
// and returns the last error.
func eventually(ctx context.Context, limit, interval time.Duration, cond func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(interval):
		}
	}
}
