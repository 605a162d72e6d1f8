package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The harness shared by the tests that build the binary and run
// `onceledger serve` as a process.

// buildBinary builds cmd/onceledger into a temporary directory, with the
// race detector when this test binary has it, so that a data race in serve
// under load fails the test (the race runtime exits 66).
func buildBinary(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the go tool is needed to build the binary")
	bin := filepath.Join(t.TempDir(), "onceledger")
	args := []string{"build", "-o", bin}
	if raceEnabled() {
		args = append(args, "-race")
	}
	args = append(args, ".")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goTool, args...).CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// syncBuffer collects the server's log for failure messages.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// server is a running `onceledger serve`.
type server struct {
	cmd    *exec.Cmd
	base   string
	log    *syncBuffer
	exited chan struct{}
	err    error // Wait's result, set before exited closes
}

// serveEnv is the process environment without any ONCELEDGER_* setting,
// plus settings: only the test's own configuration reaches the binary.
func serveEnv(settings ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ONCELEDGER_") {
			env = append(env, kv)
		}
	}
	return append(env, settings...)
}

// startServeWithEnv starts `onceledger serve` in its own process group and
// kills the group when the test ends.
func startServeWithEnv(t *testing.T, bin, addr string, env []string) *server {
	t.Helper()
	cmd := exec.Command(bin, "serve")
	cmd.Env = env
	s := &server{cmd: cmd, base: "http://" + addr, log: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.log, s.log
	// Its own process group, so that cleanup can kill it and anything it
	// started, whatever state the test ends in.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-s.exited
		}
		if t.Failed() {
			t.Logf("server log:\n%s", s.log.String())
		}
	})
	return s
}

// waitHealthy polls /healthz until it answers 200, the process exits, or
// a minute passes.
func (s *server) waitHealthy(t *testing.T) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			t.Fatalf("server exited before it was healthy: %v\n%s", s.err, s.log.String())
		default:
		}
		resp, err := client.Get(s.base + "/healthz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("server not healthy within a minute\n%s", s.log.String())
}
