package admission_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/admission"
)

// deadline bounds what must happen at once: a correctness bound (a
// request stuck behind held connections would wait for a timeout of a
// minute), not a measurement.
const deadline = 5 * time.Second

// fixture is a real server on a loopback port behind a Controller: the
// listener, ConnContext, ConnState and Middleware wired as serve wires them.
type fixture struct {
	addr    string
	ctl     *admission.Controller
	reg     *prometheus.Registry
	release chan struct{} // closed: blocked handlers return
	entered atomic.Int64  // requests that reached a blocking handler
	// blocked is how many are in one now, maxBlocked the most at once: a
	// request whose connection closed under it (evicted while its headers
	// were being read, past the reading grace, on a loaded machine) leaves
	// at once and another takes its place, so entered may pass a cap that
	// held at every moment.
	blocked, maxBlocked atomic.Int64
	// busy counts /v1/work and ?work=1 webhooks in their handler; maxBusy
	// and maxReads are the most seen at once (all, reads).
	busy, reads, maxBusy, maxReads atomic.Int64
	// idled counts, per client address, the times the server saw the
	// connection become idle (after the Controller did): net/http calls
	// ConnState(StateIdle) after the client may already have read the
	// answer, so a test that orders connections by their idle time waits
	// for it (CI once ran the next request before the previous
	// connection's StateIdle, evicting the wrong one).
	idledMu sync.Mutex
	idled   map[string]int
	// firstIdleDelay, set before a test's first request, holds the
	// server's first StateIdle that long (as a loaded machine may hold one
	// goroutine): the tests must not depend on when it comes.
	firstIdleDelay time.Duration
	delayed        atomic.Bool
}

func (f *fixture) connState(c net.Conn, s http.ConnState) {
	if s == http.StateIdle && f.firstIdleDelay > 0 && f.delayed.CompareAndSwap(false, true) {
		time.Sleep(f.firstIdleDelay)
	}
	f.ctl.ConnState(c, s)
	if s == http.StateIdle {
		f.idledMu.Lock()
		f.idled[c.RemoteAddr().String()]++
		f.idledMu.Unlock()
	}
}

// idles is how often the server saw the client c's connection become idle.
func (f *fixture) idles(c net.Conn) int {
	f.idledMu.Lock()
	defer f.idledMu.Unlock()
	return f.idled[c.LocalAddr().String()]
}

// settled does req on c and waits until the server holds c as idle again,
// so the order connections became idle in is the order of the test's lines.
func (f *fixture) settled(t *testing.T, c net.Conn, req string) (string, error) {
	t.Helper()
	before := f.idles(c)
	st, _, err := roundTrip(c, req)
	if err == nil {
		waitFor(t, func() bool { return f.idles(c) > before })
	}
	return st, err
}

// work holds the handler a moment, recording how many are in one at once.
func (f *fixture) work(read bool) {
	n := f.busy.Add(1)
	defer f.busy.Add(-1)
	raise(&f.maxBusy, n)
	if read {
		raise(&f.maxReads, f.reads.Add(1))
		defer f.reads.Add(-1)
	}
	time.Sleep(time.Millisecond)
}

func raise(m *atomic.Int64, n int64) {
	for {
		old := m.Load()
		if n <= old || m.CompareAndSwap(old, n) {
			return
		}
	}
}

func newFixture(t *testing.T, lim admission.Limits) *fixture {
	t.Helper()
	f := &fixture{release: make(chan struct{}), reg: prometheus.NewRegistry(), idled: map[string]int{}}
	f.ctl = admission.New(lim, f.reg, nil)
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }
	mux.HandleFunc("/healthz", ok)
	mux.HandleFunc("/v1/read", ok)
	mux.HandleFunc("/v1/refused", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no token", http.StatusUnauthorized)
	})
	mux.HandleFunc("/v1/work", func(w http.ResponseWriter, _ *http.Request) {
		f.work(true)
		_, _ = io.WriteString(w, "ok")
	})
	block := func(w http.ResponseWriter, r *http.Request) {
		f.entered.Add(1)
		raise(&f.maxBlocked, f.blocked.Add(1))
		defer f.blocked.Add(-1)
		select {
		case <-f.release:
		case <-r.Context().Done():
		}
		_, _ = io.WriteString(w, "ok")
	}
	mux.HandleFunc("/v1/slow", block)
	mux.HandleFunc("/v1/events", block) // a long poll that waits until released
	mux.HandleFunc("/webhooks/", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if r.URL.Query().Get("work") != "" {
			f.work(false)
		}
		if r.URL.Query().Get("block") != "" {
			block(w, r)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{
		Handler:           f.ctl.Middleware(mux),
		ConnContext:       f.ctl.ConnContext,
		ConnState:         f.connState,
		ReadHeaderTimeout: time.Minute, // the tests hold connections; nothing may time out by itself
		ReadTimeout:       time.Minute,
		IdleTimeout:       time.Minute,
	}
	go func() { _ = srv.Serve(f.ctl.Listener(l)) }()
	t.Cleanup(func() {
		select {
		case <-f.release:
		default:
			close(f.release)
		}
		_ = srv.Close()
	})
	f.addr = l.Addr().String()
	return f
}

// raw opens a connection from 127.0.0.1 (or from local, a loopback address).
func (f *fixture) raw(t *testing.T, local string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: deadline}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	c, err := d.Dial("tcp", f.addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip sends a raw request on c and returns the status line and headers.
func roundTrip(c net.Conn, req string) (string, http.Header, error) {
	if _, err := io.WriteString(c, req); err != nil {
		return "", nil, err
	}
	if err := c.SetReadDeadline(time.Now().Add(deadline)); err != nil {
		return "", nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "", nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	_ = c.SetReadDeadline(time.Time{})
	if resp.Close { // net/http moves Connection: close there
		resp.Header.Set("Connection", "close")
	}
	return resp.Status, resp.Header, nil
}

func get(path, token string) string {
	auth := ""
	if token != "" {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	return "GET " + path + " HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n"
}

func post(path, body string) string {
	return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body)
}

// client is a fresh-connection client bounded by deadline.
func client() *http.Client {
	return &http.Client{Timeout: deadline, Transport: &http.Transport{DisableKeepAlives: true}}
}

func (f *fixture) status(t *testing.T, method, path string) int {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+f.addr+path, strings.NewReader(`{"signed":true}`))
	require.NoError(t, err)
	resp, err := client().Do(req)
	require.NoError(t, err, "%s %s is answered at once", method, path)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// holdConcurrently runs n goroutines of hold and waits for them all.
func holdConcurrently(n int, hold func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { hold(i) })
	}
	wg.Wait()
}

// TestIdleConnectionsDoNotKeepOutProbesOrWebhooks: 1,030 keep-alive
// connections that made one request and idle, and 1,030 that never sent
// one, past the 1,024 connections of the budget: a health check and a
// webhook on new connections are still answered at once (each takes the
// place of one that carries nothing).
func TestIdleConnectionsDoNotKeepOutProbesOrWebhooks(t *testing.T) {
	f := newFixture(t, admission.Limits{})
	conns := make([]net.Conn, 1030)
	holdConcurrently(len(conns), func(i int) {
		conns[i] = f.raw(t, "")
		_, _, _ = roundTrip(conns[i], get("/v1/read", "")) // later ones may find theirs evicted: fine
	})
	for range 1030 {
		f.raw(t, "")
	}
	// Every connection accepted (a dial returns once the kernel has it):
	// those carrying nothing made room.
	waitLong(t, func() bool {
		return testutil.ToFloat64(metric(t, f.reg, "onceledger_admission_connections_evicted_total", "fresh"))+
			testutil.ToFloat64(metric(t, f.reg, "onceledger_admission_connections_evicted_total", "idle"))+
			testutil.ToFloat64(metric(t, f.reg, "onceledger_admission_connections_evicted_total", "served")) >= 1030+1030-1024
	})
	assert.Equal(t, 200, f.status(t, http.MethodGet, "/healthz"))
	assert.Equal(t, 200, f.status(t, http.MethodPost, "/webhooks/standard"))
}

// TestLongPollsCapped: past MaxLongPollsPerToken one token's poll gets 429
// with Retry-After; past MaxLongPolls anyone's does; health checks and
// webhooks go on.
func TestLongPollsCapped(t *testing.T) {
	f := newFixture(t, admission.Limits{MaxLongPolls: 6, MaxLongPollsPerToken: 4})
	poll := "/v1/events?after=x&wait=30s"
	for range 4 {
		_, err := io.WriteString(f.raw(t, ""), get(poll, "tokA"))
		require.NoError(t, err)
	}
	waitFor(t, func() bool { return f.entered.Load() == 4 })
	st, h, err := roundTrip(f.raw(t, ""), get(poll, "tokA"))
	require.NoError(t, err)
	assert.Equal(t, "429 Too Many Requests", st)
	assert.Equal(t, "5", h.Get("Retry-After"))
	for range 2 {
		_, err := io.WriteString(f.raw(t, ""), get(poll, "tokB"))
		require.NoError(t, err)
	}
	waitFor(t, func() bool { return f.entered.Load() == 6 })
	st, h, err = roundTrip(f.raw(t, ""), get(poll, "tokC"))
	require.NoError(t, err)
	assert.Equal(t, "429 Too Many Requests", st, "the total cap")
	assert.NotEmpty(t, h.Get("Retry-After"))
	assert.Equal(t, 200, f.status(t, http.MethodGet, "/healthz"))
	assert.Equal(t, 200, f.status(t, http.MethodPost, "/webhooks/standard"))
	assert.Equal(t, 1.0, testutil.ToFloat64(metric(t, f.reg, "onceledger_admission_shed_total", "read", "long_polls_per_token")))
	assert.Equal(t, 1.0, testutil.ToFloat64(metric(t, f.reg, "onceledger_admission_shed_total", "read", "long_polls")))
}

// TestLongPollsPerTokenCapSeesTheTokenAsAuthIs: the handler's
// authentication reads "Bearer", spaces and the token, so one token
// written with more spaces is the same token, and meets the same cap.
// Before, each spelling was its own: a token took every poll slot.
func TestLongPollsPerTokenCapSeesTheTokenAsAuthIs(t *testing.T) {
	f := newFixture(t, admission.Limits{MaxLongPolls: 100, MaxLongPollsPerToken: 2})
	poll := "/v1/events?wait=30s"
	for range 2 {
		_, err := io.WriteString(f.raw(t, ""), get(poll, "tokA"))
		require.NoError(t, err)
	}
	waitFor(t, func() bool { return f.entered.Load() == 2 })
	for _, auth := range []string{"Bearer  tokA", "bearer    tokA", "BEARER tokA"} {
		st, h, err := roundTrip(f.raw(t, ""), "GET "+poll+" HTTP/1.1\r\nHost: x\r\nAuthorization: "+auth+"\r\n\r\n")
		require.NoError(t, err, "%q is answered at once", auth)
		assert.Equal(t, "429 Too Many Requests", st, auth)
		assert.Equal(t, "5", h.Get("Retry-After"))
	}
}

// TestManyLongPollsDoNotKeepOutProbesOrWebhooks: 1,030 long polls, each
// with its own token: MaxLongPolls wait, the others get 429 at once, and
// a health check and a webhook are answered.
func TestManyLongPollsDoNotKeepOutProbesOrWebhooks(t *testing.T) {
	f := newFixture(t, admission.Limits{})
	var refused atomic.Int64
	holdConcurrently(1030, func(i int) {
		c := f.raw(t, "")
		_, err := io.WriteString(c, get("/v1/events?wait=60s", fmt.Sprint("tok", i)))
		if err != nil {
			return
		}
		// Only a refusal answers: read it if it comes quickly.
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "" {
				refused.Add(1)
			}
			_ = resp.Body.Close()
		}
	})
	// CI's first-run test (every package's short tests at once) once saw
	// this wait run out when it asked for entered == the cap: a poll may
	// end at once and another take its place (fixture.blocked); the cap is
	// asserted on maxBlocked below. The waits over 1,030 connections take
	// waitLong: their time grows with the machine's load, the condition
	// does not change.
	waitLong(t, func() bool { return f.entered.Load() >= admission.DefaultMaxLongPolls })
	shed := func() float64 {
		return testutil.ToFloat64(metric(t, f.reg, "onceledger_admission_shed_total", "read", "long_polls"))
	}
	// Every poll is answered or waits, but for the few connections (past
	// 1,024) that took the place of others not yet carrying their poll.
	waitLong(t, func() bool {
		evicted := 0.0
		for _, state := range []string{"fresh", "idle", "served", "reading"} {
			evicted += testutil.ToFloat64(metric(t, f.reg, "onceledger_admission_connections_evicted_total", state))
		}
		return shed()+float64(f.entered.Load())+evicted >= 1030
	})
	assert.InDelta(t, float64(1030-admission.DefaultMaxLongPolls), shed(), 6)
	assert.LessOrEqual(t, f.maxBlocked.Load(), int64(admission.DefaultMaxLongPolls), "never more long polls at once than the cap")
	assert.Positive(t, refused.Load(), "the refused see 429 with Retry-After")
	assert.Equal(t, 200, f.status(t, http.MethodGet, "/healthz"))
	assert.Equal(t, 200, f.status(t, http.MethodPost, "/webhooks/standard"))
}

// TestReadersNeverTakeTheReserve: with a budget of 8 connections and 4
// reserved, 4 slow reads hold the readers' share: a fifth read is shed
// with 503, a webhook and a health check are served.
func TestReadersNeverTakeTheReserve(t *testing.T) {
	f := newFixture(t, admission.Limits{MaxConnections: 8, ReservedConnections: 4, MaxInFlightReads: 100, MaxInFlight: 100})
	for range 4 {
		_, err := io.WriteString(f.raw(t, ""), get("/v1/slow", "t"))
		require.NoError(t, err)
	}
	waitFor(t, func() bool { return f.entered.Load() == 4 })
	st, h, err := roundTrip(f.raw(t, ""), get("/v1/read", "t"))
	require.NoError(t, err)
	assert.Equal(t, "503 Service Unavailable", st)
	assert.Equal(t, "1", h.Get("Retry-After"))
	assert.Equal(t, 200, f.status(t, http.MethodGet, "/healthz"))
	assert.Equal(t, 200, f.status(t, http.MethodPost, "/webhooks/standard"))
}

// TestPerAddressCap: an address holding MaxConnectionsPerAddress
// connections in handlers gets its next one closed at once; another
// address is served.
func TestPerAddressCap(t *testing.T) {
	f := newFixture(t, admission.Limits{MaxConnectionsPerAddress: 3, CountLoopback: true})
	for range 3 {
		_, err := io.WriteString(f.raw(t, "127.0.0.2"), get("/v1/slow", "t"))
		require.NoError(t, err)
	}
	waitFor(t, func() bool { return f.entered.Load() == 3 })
	_, _, err := roundTrip(f.raw(t, "127.0.0.2"), get("/healthz", ""))
	assert.Error(t, err, "the fourth connection of 127.0.0.2 is closed unanswered")
	assert.Equal(t, 200, f.status(t, http.MethodGet, "/healthz"), "127.0.0.1 is served")
	assert.Equal(t, 1.0, testutil.ToFloat64(metric(t, f.reg, "onceledger_admission_connections_refused_total", "per_address")))
}

// TestLoopbackIsNotCappedPerAddress: by default loopback clients (a
// local proxy, a benchmark) are not bounded per address.
func TestLoopbackIsNotCappedPerAddress(t *testing.T) {
	f := newFixture(t, admission.Limits{MaxConnectionsPerAddress: 2})
	for range 3 {
		_, err := io.WriteString(f.raw(t, ""), get("/v1/slow", "t"))
		require.NoError(t, err)
	}
	waitFor(t, func() bool { return f.entered.Load() == 3 })
	assert.Equal(t, 200, f.status(t, http.MethodGet, "/healthz"))
}

// TestShedWebhookIsAnsweredBeforeItsBody: with the webhooks' in-flight
// budget spent, a webhook that sends its headers and never its body gets
// 503 with Retry-After at once (the server's read timeout is a minute,
// the wait for a small body shedDrain) and its connection is closed.
func TestShedWebhookIsAnsweredBeforeItsBody(t *testing.T) {
	f := fullFixture(t)
	c := f.raw(t, "")
	st, h, err := roundTrip(c, "POST /webhooks/standard HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
	require.NoError(t, err, "answered without its body")
	assert.Equal(t, "503 Service Unavailable", st)
	assert.Equal(t, "1", h.Get("Retry-After"))
	assert.Equal(t, "close", h.Get("Connection"), "the body never came: the connection closes")

	// A large body announced: the same.
	st, h, err = roundTrip(f.raw(t, ""), "POST /webhooks/standard HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n")
	require.NoError(t, err)
	assert.Equal(t, "503 Service Unavailable", st)
	assert.Equal(t, "close", h.Get("Connection"))
	assert.Equal(t, 2.0, testutil.ToFloat64(metric(t, f.reg, "onceledger_admission_shed_total", "webhook", "in_flight")))
	assert.Equal(t, 200, f.status(t, http.MethodGet, "/healthz"), "health is not counted as work")
}

// TestShedWebhookWithItsBodyKeepsItsConnection: a shed webhook whose small
// body arrived with it (every provider sends headers and body at once) is
// answered 503 on a connection that stays open: closing it made every
// shed delivery cost a new connection at both ends, at 150 % of the
// maximum a third of the traffic. Its next request is served on it.
func TestShedWebhookWithItsBodyKeepsItsConnection(t *testing.T) {
	f := fullFixture(t)
	c := f.raw(t, "")
	st, h, err := roundTrip(c, post("/webhooks/standard", strings.Repeat("x", 2000)))
	require.NoError(t, err)
	assert.Equal(t, "503 Service Unavailable", st)
	assert.Equal(t, "1", h.Get("Retry-After"))
	assert.Empty(t, h.Get("Connection"), "the body arrived: the connection is kept")
	time.Sleep(100 * time.Millisecond) // the discard's short read deadline must not outlive it
	st, _, err = roundTrip(c, get("/healthz", ""))
	require.NoError(t, err, "the next request on the same connection")
	assert.Equal(t, "200 OK", st)
	assert.Equal(t, 1.0, testutil.ToFloat64(metric(t, f.reg, "onceledger_admission_shed_total", "webhook", "in_flight")))
}

// TestReadsAreShedFirstHealthNever: reads are refused from half of
// MaxInFlight, webhooks go on to MaxInFlight, and health checks are never
// refused, 50 at once.
func TestReadsAreShedFirstHealthNever(t *testing.T) {
	f := newFixture(t, admission.Limits{MaxInFlight: 4, QueueWait: -1})
	for range 2 {
		_, err := io.WriteString(f.raw(t, ""), get("/v1/slow", "t"))
		require.NoError(t, err)
	}
	waitFor(t, func() bool { return f.entered.Load() == 2 })
	st, _, err := roundTrip(f.raw(t, ""), get("/v1/read", "t"))
	require.NoError(t, err)
	assert.Equal(t, "503 Service Unavailable", st, "reads stop at half the budget")
	for range 2 {
		_, err := io.WriteString(f.raw(t, ""), post("/webhooks/standard?block=1", "{}"))
		require.NoError(t, err)
	}
	waitFor(t, func() bool { return f.entered.Load() == 4 })
	assert.Equal(t, http.StatusServiceUnavailable, f.status(t, http.MethodPost, "/webhooks/standard"), "webhooks stop at the budget")
	var ok atomic.Int64
	holdConcurrently(50, func(int) {
		if f.status(t, http.MethodGet, "/healthz") == 200 {
			ok.Add(1)
		}
	})
	assert.Equal(t, int64(50), ok.Load())
}

// TestQueuedWebhookTakesTheFreedSlot: a webhook that finds the budget
// spent waits (up to QueueWait) and is served when a slot frees.
func TestQueuedWebhookTakesTheFreedSlot(t *testing.T) {
	f := newFixture(t, admission.Limits{MaxInFlight: 1, QueueWait: time.Minute})
	_, err := io.WriteString(f.raw(t, ""), post("/webhooks/standard?block=1", "{}"))
	require.NoError(t, err)
	waitFor(t, func() bool { return f.entered.Load() == 1 })
	got := make(chan int, 1)
	go func() { got <- f.status(t, http.MethodPost, "/webhooks/standard") }()
	close(f.release)
	assert.Equal(t, 200, <-got)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, deadline, time.Millisecond)
}

// waitLong is waitFor for what a thousand connections must do first.
func waitLong(t *testing.T, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 6*deadline, 5*time.Millisecond)
}

// metric is the child of a registered counter vector with labels.
func metric(t *testing.T, reg *prometheus.Registry, name string, labels ...string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := true
			for i, lp := range m.GetLabel() {
				if i >= len(labels) || lp.GetValue() != labels[i] {
					match = false
				}
			}
			if match {
				return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x", Help: "x"},
					func() float64 { return m.GetCounter().GetValue() })
			}
		}
	}
	return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x", Help: "x"}, func() float64 { return 0 })
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		method, target, ctype string
		class                 admission.Class
		poll                  bool
	}{
		{"GET", "/healthz", "", admission.Health, false},
		{"GET", "/readyz", "", admission.Health, false},
		{"GET", "/metrics", "", admission.Health, false},
		{"POST", "/webhooks/stripe", "", admission.Webhook, false},
		{"HEAD", "/webhooks/circle", "", admission.Webhook, false},
		{"POST", "/v1/settlements/stripe", "text/csv", admission.Upload, false},
		{"POST", "/v1/bank-statements", "", admission.Upload, false},
		{"POST", "/console/settlements", "multipart/form-data; boundary=x", admission.Upload, false},
		{"POST", "/console/signin", "application/x-www-form-urlencoded", admission.Read, false},
		{"GET", "/v1/events?wait=30s", "", admission.Read, true},
		{"GET", "/v1/events?after=a&wait=1m&limit=3", "", admission.Read, true},
		{"GET", "/v1/events?wait=0s", "", admission.Read, false},
		{"GET", "/v1/events?after=a", "", admission.Read, false},
		{"GET", "/v1/events?wait=nonsense", "", admission.Read, true},
		// The handler reads the decoded query: an escaped key or value is
		// the same wait, and must meet the long-poll caps.
		{"GET", "/v1/events?wai%74=30s", "", admission.Read, true},
		{"GET", "/v1/events?after=a&%77%61%69%74=1m", "", admission.Read, true},
		{"GET", "/v1/events?wait=%33%30s", "", admission.Read, true},
		{"GET", "/v1/events?await=30s&waitx=1m", "", admission.Read, false},
		{"GET", "/v1/payments", "", admission.Read, false},
	} {
		r, err := http.NewRequest(c.method, "http://x"+c.target, nil)
		require.NoError(t, err)
		r.Header.Set("Content-Type", c.ctype)
		class, poll := admission.Classify(r)
		assert.Equal(t, c.class, class, "%s %s", c.method, c.target)
		assert.Equal(t, c.poll, poll, "%s %s", c.method, c.target)
	}
}

// TestInFlightBoundUnderConcurrency: 200 goroutines send webhooks and
// reads at once through real connections; the handlers never see more
// work at once than the budget, every answer is 200 or a 503 with
// Retry-After, and every webhook the server took was answered 200.
func TestInFlightBoundUnderConcurrency(t *testing.T) {
	const budget = 8
	f := newFixture(t, admission.Limits{MaxInFlight: budget, MaxInFlightReads: 3, QueueWait: 5 * time.Millisecond})
	var other atomic.Int64
	holdConcurrently(200, func(i int) {
		path, method := "/webhooks/standard?work=1", http.MethodPost
		if i%3 == 0 {
			path, method = "/v1/work", http.MethodGet
		}
		for range 10 {
			req, _ := http.NewRequestWithContext(context.Background(), method, "http://"+f.addr+path, strings.NewReader("{}"))
			resp, err := client().Do(req)
			if err != nil {
				other.Add(1)
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != 200 && (resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "") {
				other.Add(1)
			}
		}
	})
	assert.Zero(t, other.Load())
	assert.LessOrEqual(t, f.maxBusy.Load(), int64(budget))
	assert.LessOrEqual(t, f.maxReads.Load(), int64(3))
	assert.Positive(t, f.maxBusy.Load())
}

// TestEvictionOrder: at the budget, a new connection takes the place of
// the oldest one that never sent a request, then of the one idle the
// longest; a connection used recently is kept.
func TestEvictionOrder(t *testing.T) {
	// FreshGrace off: the order itself (TestARequestUnderWayIsNotEvicted
	// covers the grace of a young fresh connection).
	f := newFixture(t, admission.Limits{MaxConnections: 4, ReservedConnections: 1, FreshGrace: -1})
	f.firstIdleDelay = 300 * time.Millisecond // older's: CI once saw it come after recent's
	evicted := func() float64 {
		return testutil.ToFloat64(metric(t, f.reg, "onceledger_admission_connections_evicted_total", "fresh")) +
			testutil.ToFloat64(metric(t, f.reg, "onceledger_admission_connections_evicted_total", "idle")) +
			testutil.ToFloat64(metric(t, f.reg, "onceledger_admission_connections_evicted_total", "served"))
	}
	open := func() float64 {
		mfs, err := f.reg.Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() == "onceledger_admission_connections" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		return -1
	}
	read := func(c net.Conn) {
		st, err := f.settled(t, c, get("/v1/read", ""))
		require.NoError(t, err)
		require.Equal(t, "200 OK", st)
	}
	used := func() net.Conn {
		c := f.raw(t, "")
		read(c)
		return c
	}
	older := used()
	recent := used()
	fresh1 := f.raw(t, "")
	waitFor(t, func() bool { return open() == 3 }) // accepted in this order
	fresh2 := f.raw(t, "")
	waitFor(t, func() bool { return open() == 4 })
	read(recent) // now the most recently used

	used() // takes the place of fresh1: the oldest never used
	assert.Equal(t, 1.0, evicted())
	assertClosed(t, fresh1)
	used() // of fresh2
	assertClosed(t, fresh2)
	used() // of older: the longest idle (both were served)
	assertClosed(t, older)
	assert.Equal(t, 2.0, testutil.ToFloat64(metric(t, f.reg, "onceledger_admission_connections_evicted_total", "fresh")))
	assert.Equal(t, 1.0, testutil.ToFloat64(metric(t, f.reg, "onceledger_admission_connections_evicted_total", "served")))
	read(recent) // kept
}

// assertClosed says the server closed c (an end of file or a reset, not a
// read timeout).
func assertClosed(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(deadline)))
	_, err := c.Read(make([]byte, 1))
	require.Error(t, err)
	var ne net.Error
	assert.False(t, errors.As(err, &ne) && ne.Timeout(), "closed by the server, not timed out: %v", err)
}

// A connection whose last answer refused its request (a 401 without a
// token, a forged signature's 401) is closed before one whose last request
// was served, however long each has been idle: the hostile soak of issue
// 33 held thousands of connections idle after a 401, and the budget evicted
// the legitimate senders' keep-alive connections among them, failing their
// next POST with EOF. A health check's answer earns nothing (anyone may
// send one).
func TestRefusedConnectionsAreEvictedBeforeServedOnes(t *testing.T) {
	f := newFixture(t, admission.Limits{MaxConnections: 4, ReservedConnections: 1})
	f.firstIdleDelay = 300 * time.Millisecond // served's: it must still be taken as the longest idle
	do := func(c net.Conn, req, want string) {
		t.Helper()
		st, err := f.settled(t, c, req)
		require.NoError(t, err)
		require.Equal(t, want, st)
	}
	served := f.raw(t, "")
	do(served, post("/webhooks/standard", "{}"), "200 OK") // the longest idle of all
	refused := f.raw(t, "")
	do(refused, get("/v1/refused", ""), "401 Unauthorized")
	probed := f.raw(t, "")
	do(probed, get("/healthz", ""), "200 OK")
	other := f.raw(t, "")
	do(other, get("/v1/read", "tok"), "200 OK")

	do(f.raw(t, ""), get("/v1/read", "tok"), "200 OK") // takes the refused one's place
	assertClosed(t, refused)
	do(f.raw(t, ""), get("/v1/read", "tok"), "200 OK") // then the probe's: a health check earns nothing
	assertClosed(t, probed)
	do(served, post("/webhooks/standard", "{}"), "200 OK") // the served one, though idle the longest, is kept
}

// A connection whose request has begun to arrive is not "fresh": under a
// flood of new connections that take the place of fresh ones, a client that
// connected and wrote its request at once lost it (EOF) when it was the
// oldest fresh connection before its handler ran (issue 33's soak: legitimate
// POSTs on new connections). A request that stays incomplete past the grace
// is closed like a fresh one, so a trickler cannot hold the budget.
func TestARequestUnderWayIsNotEvicted(t *testing.T) {
	f := newFixture(t, admission.Limits{MaxConnections: 3, ReservedConnections: 1})
	legit := f.raw(t, "")
	req := post("/webhooks/standard", "{}")
	_, err := io.WriteString(legit, req[:10]) // its first bytes: under way
	require.NoError(t, err)
	// Until the server has read those bytes (CI once flooded before it had,
	// under load, though a probe on a later connection had been answered:
	// the legitimate connection was still fresh, and closed).
	waitFor(t, func() bool { return f.ctl.ReadingConnections() == 1 })
	for range 10 { // a flood of fresh connections, each taking the place of the oldest fresh one
		f.raw(t, "")
	}
	waitFor(t, func() bool {
		return testutil.ToFloat64(metric(t, f.reg, "onceledger_admission_connections_evicted_total", "fresh")) >= 8
	})
	_, err = io.WriteString(legit, req[10:])
	require.NoError(t, err)
	st, _, err := roundTrip(legit, "") // its answer
	require.NoError(t, err, "the request under way was kept")
	assert.Equal(t, "200 OK", st)

	trickler := f.raw(t, "")
	_, err = io.WriteString(trickler, "POST /webhooks/standard HTTP/1.1\r\n")
	require.NoError(t, err)
	time.Sleep(1500 * time.Millisecond) // past the grace
	for range 3 {
		f.raw(t, "")
	}
	assertClosed(t, trickler)
	assert.Equal(t, 1.0, testutil.ToFloat64(metric(t, f.reg, "onceledger_admission_connections_evicted_total", "reading")))
}

// fullFixture is a server of two in flight, no queue, both taken by
// webhooks that block: the next webhook is shed.
func fullFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, admission.Limits{MaxInFlight: 2, QueueWait: -1})
	for range 2 {
		_, err := io.WriteString(f.raw(t, ""), post("/webhooks/standard?block=1", "{}"))
		require.NoError(t, err)
	}
	waitFor(t, func() bool { return f.entered.Load() == 2 })
	return f
}
