package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// cluster is a throwaway PostgreSQL cluster of one test: initdb into a temp
// dir, its own port and socket dir, trust auth, listening on 127.0.0.1 only.
// Stopping it is safe; the machine's shared server is never touched.
type cluster struct {
	t       *testing.T
	bin     string
	root    string
	data    string
	sock    string
	logPath string
	port    int
	cred    *syscall.Credential // run as the postgres OS user when we are root
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("chaos: needs PostgreSQL server binaries; skipped in -short mode")
	}
	c := &cluster{t: t, bin: pgBinDir(t), port: freePort(t)}
	root, err := os.MkdirTemp("", "onceledger-chaos-pg-")
	require.NoError(t, err)
	c.root = root
	c.data = filepath.Join(root, "data")
	c.sock = filepath.Join(root, "sock")
	c.logPath = filepath.Join(root, "postgres.log")
	require.NoError(t, os.Mkdir(c.sock, 0o700))
	if os.Geteuid() == 0 {
		// initdb refuses to run as root: hand the directory to postgres.
		u, err := user.Lookup("postgres")
		require.NoError(t, err, "chaos: running as root needs a postgres OS user for initdb")
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		for _, p := range []string{root, c.sock} {
			require.NoError(t, os.Chown(p, uid, gid))
		}
	}
	require.NoError(t, os.Chmod(root, 0o700))
	t.Cleanup(func() {
		// Immediate: the cluster is thrown away; then make sure no postmaster
		// survives before deleting its directory.
		_ = c.pgctl("stop", "-m", "immediate", "-w", "-t", "30")
		if b, err := os.ReadFile(filepath.Join(c.data, "postmaster.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0]); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if t.Failed() {
			t.Logf("last lines of the throwaway cluster's log:\n%s", tail(c.logPath, 20))
		}
		_ = os.RemoveAll(c.root)
	})
	out, err := c.run("initdb", "-D", c.data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
	require.NoError(t, err, "initdb:\n%s", out)
	c.start()
	return c
}

// url is the connection string of a database on this cluster (serve creates
// it at start).
func (c *cluster) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

func (c *cluster) start() {
	c.t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200", c.port, c.sock)
	if err := c.pgctl("start", "-w", "-t", "60", "-l", c.logPath, "-o", opts); err != nil {
		require.NoError(c.t, err, "pg_ctl start:\n%s", tail(c.logPath, 20))
	}
}

// stop shuts the cluster down the way an operator or a failover does:
// fast mode aborts open transactions and closes every connection.
func (c *cluster) stop() {
	c.t.Helper()
	require.NoError(c.t, c.pgctl("stop", "-m", "fast", "-w", "-t", "60"), "pg_ctl stop")
}

func (c *cluster) pgctl(args ...string) error {
	out, err := c.run("pg_ctl", append([]string{"-D", c.data}, args...)...)
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

func (c *cluster) run(prog string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(c.bin, prog), args...)
	cmd.Dir = c.root
	cmd.Env = append(withoutOnceledgerEnv(os.Environ()), "LC_ALL=C")
	// Own process group, so a Ctrl-C of the test run is not delivered to the
	// postmaster before cleanup stops it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: c.cred}
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
		return out, err
	case <-time.After(2 * time.Minute):
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		<-done
		return out, fmt.Errorf("%s timed out", prog)
	}
}

// pgBinDir finds initdb and pg_ctl: ONCELEDGER_CHAOS_PG_BIN, pg_config
// --bindir, or the newest /usr/lib/postgresql/*/bin.
func pgBinDir(t *testing.T) string {
	t.Helper()
	var candidates []string
	if d := os.Getenv("ONCELEDGER_CHAOS_PG_BIN"); d != "" {
		candidates = append(candidates, d)
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		candidates = append(candidates, strings.TrimSpace(string(out)))
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) > pgMajor(dirs[j]) })
	candidates = append(candidates, dirs...)
	for _, d := range candidates {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "pg_ctl")) {
			return d
		}
	}
	require.Failf(t, "chaos: PostgreSQL server binaries (initdb, pg_ctl) not found", "searched %v; set ONCELEDGER_CHAOS_PG_BIN", candidates)
	return ""
}

func pgMajor(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}
