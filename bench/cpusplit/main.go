// Command cpusplit says where the machine's CPU went while a bench step ran,
// and what the database's backends were waiting on: a profile of the whole
// machine, not of one Go process (pprof shows that one's inside).
//
// It samples every -interval, until it is interrupted (SIGINT/SIGTERM) or
// the process named by -until exits:
//
//   - each process whose command line contains a -proc pattern
//     (label=substring, e.g. 'import=settle import'): its CPU (user+system,
//     /proc/PID/stat), every thread;
//   - each Postgres backend connected to -db, attributed to the process at
//     the other end of its socket (its client_port, looked up in
//     /proc/net/tcp and the labelled processes' descriptors) and to its
//     application_name, with its CPU and, when it is active, its wait event
//     (pg_stat_activity; "CPU" when it waits on nothing) and the first
//     characters of its statement: a sampling profile of the SQL, for a
//     cluster without pg_stat_statements (the bench's private one);
//   - the cluster's other processes (WAL writer, checkpointer, autovacuum
//     workers, other databases' backends), by their title.
//
// A process seen once is counted from its first sample (one that starts and
// ends between two samples is missed); one that exits keeps its last
// sample's CPU, so up to -interval of its end is missed. bench/run.sh (step
// 6 with BENCH_SETTLE_PROFILE=1) and bench/ingestcost.sh (SPLIT=1) use it:
//
//	cpusplit -db NAME -proc import='settle import' -proc serve='onceledger serve' -until PID
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// clusterURL is the postgres database of the cluster PGHOST, PGPORT and
// PGUSER name (127.0.0.1, 5432, postgres when unset): the cluster the bench
// scripts' own psql and createdb talk to, a private one included.
func clusterURL() string {
	env := func(k, d string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return d
	}
	return "postgres://" + env("PGUSER", "postgres") + "@" + env("PGHOST", "127.0.0.1") + ":" + env("PGPORT", "5432") + "/postgres?sslmode=disable"
}

type procPattern struct{ label, substr string }

type patterns []procPattern

func (p *patterns) String() string { return fmt.Sprint(*p) }
func (p *patterns) Set(v string) error {
	label, sub, ok := strings.Cut(v, "=")
	if !ok || label == "" || sub == "" {
		return errors.New("want label=substring")
	}
	*p = append(*p, procPattern{label, sub})
	return nil
}

// seen is one process's CPU at its first and last sample, in clock ticks.
type seen struct {
	group      string // what it is counted under
	first, cur int64
}

func main() {
	var procs patterns
	url := flag.String("database-url", clusterURL(), "a database of the cluster to read pg_stat_activity from (default: PGHOST, PGPORT and PGUSER's, as the bench scripts' psql)")
	db := flag.String("db", "", "the database whose backends are attributed")
	interval := flag.Duration("interval", 200*time.Millisecond, "sampling interval")
	until := flag.Int("until", 0, "stop when this process exits (0: on SIGINT/SIGTERM only)")
	flag.Var(&procs, "proc", "label=substring of a process's command line (repeatable)")
	flag.Parse()
	if *db == "" {
		fmt.Fprintln(os.Stderr, "cpusplit: -db is required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	conn, err := pgx.Connect(ctx, *url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cpusplit:", err)
		os.Exit(1)
	}
	defer conn.Close(context.Background())
	s := &sampler{db: *db, procs: procs, self: os.Getpid(), seen: map[int]*seen{}, waits: map[string]map[string]int{},
		queries: map[string]map[string]int{}}
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&s.ownBackend); err != nil {
		fmt.Fprintln(os.Stderr, "cpusplit:", err)
		os.Exit(1)
	}
	start := time.Now()
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	for {
		if err := s.sample(ctx, conn); err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "cpusplit: sample:", err)
		}
		if *until > 0 && !alive(*until) {
			break
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
			continue
		}
		break
	}
	s.report(os.Stdout, time.Since(start))
}

type sampler struct {
	db         string
	procs      patterns
	self       int
	ownBackend int
	seen       map[int]*seen
	waits      map[string]map[string]int // group → wait event → samples
	queries    map[string]map[string]int // group → the active statement's first characters → samples
	samples    int
}

func (s *sampler) sample(ctx context.Context, conn *pgx.Conn) error {
	s.samples++
	owners := s.labelled() // pid → label of the labelled processes alive now
	ports := socketOwners(owners)
	// A parallel worker is counted with its leader (leader_pid), an
	// autovacuum worker by its type: neither has a client.
	rows, err := conn.Query(ctx, `SELECT a.pid, coalesce(l.application_name, a.application_name, ''),
			coalesce(l.client_port, a.client_port, 0), coalesce(a.backend_type, ''), a.leader_pid IS NOT NULL AND a.leader_pid <> a.pid,
			coalesce(a.state = 'active', false), coalesce(a.wait_event_type || ':' || a.wait_event, ''),
			left(regexp_replace(coalesce(a.query, ''), '\s+', ' ', 'g'), 90)
		FROM pg_stat_activity a LEFT JOIN pg_stat_activity l ON l.pid = a.leader_pid AND a.leader_pid <> a.pid
		WHERE a.datname = $1 AND a.pid <> pg_backend_pid()`, s.db)
	if err != nil {
		return err
	}
	backends := map[int]bool{}
	var pid, port int
	var app, btype, wait, query string
	var parallel, active bool
	_, err = pgx.ForEachRow(rows, []any{&pid, &app, &port, &btype, &parallel, &active, &wait, &query}, func() error {
		backends[pid] = true
		owner := ports[port]
		if owner == "" {
			owner = "other client"
		}
		if app == "" {
			app = "-"
		}
		group := "postgres backends of " + owner + " (" + app + ")"
		switch {
		case parallel:
			group += ", parallel workers"
		case btype != "client backend" && btype != "":
			group = "postgres: " + btype + " (" + s.db + ")"
		}
		s.countBackend(pid, group)
		if active {
			q := s.queries[group]
			if q == nil {
				q = map[string]int{}
				s.queries[group] = q
			}
			q[query]++
			if wait == "" {
				wait = "CPU"
			}
			m := s.waits[group]
			if m == nil {
				m = map[string]int{}
				s.waits[group] = m
			}
			m[wait]++
		}
		return nil
	})
	if err != nil {
		return err
	}
	for pid, label := range owners {
		s.count(pid, label)
	}
	// The cluster's other processes: every process whose title starts
	// with "postgres:" that is not a backend of db (nor this tool's own).
	for _, pid := range allPids() {
		if backends[pid] || pid == s.ownBackend || owners[pid] != "" {
			continue
		}
		if sn, ok := s.seen[pid]; ok && !strings.HasPrefix(sn.group, "postgres: ") {
			continue
		}
		title := cmdline(pid)
		if !strings.HasPrefix(title, "postgres: ") {
			continue
		}
		s.count(pid, "postgres: "+postgresRole(title))
	}
	return nil
}

// postgresRole names a server process by its title without its cluster,
// database or client: "walwriter", "autovacuum worker", "backend (other
// database)".
func postgresRole(title string) string {
	t := strings.TrimPrefix(title, "postgres: ")
	if i := strings.Index(t, "main: "); i >= 0 { // Debian's "15/main: walwriter"
		t = t[i+len("main: "):]
	}
	for _, r := range []string{"walwriter", "checkpointer", "background writer", "autovacuum worker", "autovacuum launcher",
		"logical replication launcher", "walsender", "stats collector", "archiver", "parallel worker"} {
		if strings.HasPrefix(t, r) {
			return r
		}
	}
	return "backends of other databases"
}

// countBackend counts a backend of db under group, also when the /proc
// scan saw it first (forked after the last pg_stat_activity read): a title
// does not say whose a backend is, pg_stat_activity does.
func (s *sampler) countBackend(pid int, group string) {
	if sn, ok := s.seen[pid]; ok && strings.HasPrefix(sn.group, "postgres: ") {
		sn.group = group
	}
	s.count(pid, group)
}

func (s *sampler) count(pid int, group string) {
	t, ok := cpuTicks(pid)
	if !ok {
		return
	}
	if sn, ok := s.seen[pid]; ok {
		sn.cur = t
		return
	}
	s.seen[pid] = &seen{group: group, first: t, cur: t}
}

// labelled finds the processes whose command line holds a pattern.
func (s *sampler) labelled() map[int]string {
	out := map[int]string{}
	for _, pid := range allPids() {
		if pid == s.self {
			continue
		}
		cl := cmdline(pid)
		for _, p := range s.procs {
			if strings.Contains(cl, p.substr) && !strings.Contains(cl, "cpusplit") {
				out[pid] = p.label
				break
			}
		}
	}
	return out
}

func (s *sampler) report(w *os.File, wall time.Duration) {
	tk := float64(clockTicks())
	cpu := map[string]float64{}
	var total float64
	for _, sn := range s.seen {
		v := float64(sn.cur-sn.first) / tk
		cpu[sn.group] += v
		total += v
	}
	groups := make([]string, 0, len(cpu))
	for g := range cpu {
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool { return cpu[groups[i]] > cpu[groups[j]] })
	fmt.Fprintf(w, "cpu split over %.1f s of wall time (%d samples): %.1f CPU s counted, %.2f cores\n",
		wall.Seconds(), s.samples, total, total/wall.Seconds())
	for _, g := range groups {
		if cpu[g] < 0.005*total {
			continue
		}
		fmt.Fprintf(w, "  %-70s %8.1f s  %5.1f %%\n", g, cpu[g], 100*cpu[g]/total)
	}
	fmt.Fprintln(w, "wait events of the active backends (share of their samples):")
	wg := make([]string, 0, len(s.waits))
	for g := range s.waits {
		wg = append(wg, g)
	}
	sort.Strings(wg)
	for _, g := range wg {
		m := s.waits[g]
		n := 0
		keys := make([]string, 0, len(m))
		for k, v := range m {
			n += v
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
		var parts []string
		for i, k := range keys {
			if i == 6 {
				break
			}
			parts = append(parts, fmt.Sprintf("%s %.0f%%", k, 100*float64(m[k])/float64(n)))
		}
		fmt.Fprintf(w, "  %s: %d active samples: %s\n", g, n, strings.Join(parts, ", "))
		qs := s.queries[g]
		keys = keys[:0]
		for k := range qs {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return qs[keys[i]] > qs[keys[j]] })
		for i, k := range keys {
			if i == 5 || 100*qs[k] < 3*n {
				break
			}
			fmt.Fprintf(w, "      %4.1f %%  %s\n", 100*float64(qs[k])/float64(n), k)
		}
	}
}

// alive: the process exists and is not a zombie (one its parent has not
// waited for yet, as a shell's background job until the shell's wait).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

func allPids() []int {
	ents, _ := os.ReadDir("/proc")
	out := make([]int, 0, len(ents))
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

func cmdline(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

// cpuTicks is utime+stime of /proc/PID/stat (fields 14 and 15, counted
// after the command's parenthesis, which may hold spaces).
func cpuTicks(pid int) (int64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return u + st, true
}

// clockTicks is the kernel's USER_HZ, 100 on every Linux this runs on
// (sysconf(_SC_CLK_TCK); the Go standard library does not expose it).
func clockTicks() int64 { return 100 }

// socketOwners maps the local TCP port of each socket held by a labelled
// process to its label: a backend's client_port names its client.
func socketOwners(owners map[int]string) map[int]string {
	inodes := map[string]string{} // socket inode → label
	for pid, label := range owners {
		fds, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/fd/*")
		for _, fd := range fds {
			l, err := os.Readlink(fd)
			if err == nil && strings.HasPrefix(l, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = label
			}
		}
	}
	out := map[int]string{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 {
				continue
			}
			label, ok := inodes[fs[9]]
			if !ok {
				continue
			}
			_, hexPort, ok := strings.Cut(fs[1], ":")
			if !ok {
				continue
			}
			if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil {
				out[int(p)] = label
			}
		}
		_ = fh.Close()
	}
	return out
}
