package admission

import (
	"container/list"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"
)

// The connection budget.
//
// A connection's class is only known at its first request, and a client
// can make any connection look like a health check's by sending one, so
// the budget does not reserve connections by class at accept. Instead:
//
//   - a connection that is not inside a handler (fresh: accepted, no
//     request yet; or idle: between keep-alive requests, headers of the
//     next one possibly arriving) does no work and can be closed without
//     losing an answer. When the budget is spent, a new connection takes
//     the place of one of them: the oldest fresh one first (a client that
//     opens connections and sends nothing is the one to lose), then the
//     idle one whose last request was refused or only a health check (a
//     401 without a token, a forged signature: anyone can earn those), the
//     longest idle first, and only then the one idle the longest among
//     those whose last request was served (a provider delivering steadily
//     reuses its connections and is never the longest idle; closing a
//     served one races its client's next request, which then fails with
//     EOF and is retried later). That is the
//     "unclassified pool": fresh connections are the first closed, and
//     without pressure they live at most the header timeout;
//   - connections inside a handler are bounded by class (Middleware):
//     reads, uploads and long polls together never hold more than
//     MaxConnections-ReservedConnections, work by the in-flight budget, so
//     the reserve is always there for webhooks and health checks, and a
//     webhook or probe always finds a connection to take the place of;
//   - one address (an IPv6 client: its /64) holds at most
//     MaxConnectionsPerAddress connections; past it a new connection from
//     it is closed at once.
//
// Only when every connection is inside a handler (the caps above make that
// impossible with consistent settings) is a new one closed at once too.

// conn is an accepted connection.
type conn struct {
	net.Conn
	ctl  *Controller
	addr string
	// Guarded by ctl.mu:
	elem   *list.Element // in ctl.conns.fresh, .idle, .served or .reading; nil while in a handler or gone
	in     *list.List    // the list elem is in
	since  time.Time     // when it entered that list
	used   bool          // has carried a request
	served bool          // its last request, other than a health check, was answered below 400
	gone   bool          // counted out (closed or evicted)
	begun  atomic.Bool   // a byte of its next request has been read (Read)
}

// Read marks the connection as carrying a request at its first byte: from
// then on it is not fresh or idle but reading (see connTable.reading).
func (c *conn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && !c.begun.Load() {
		c.begun.Store(true)
		c.ctl.begin(c)
	}
	return n, err
}

func (c *conn) Close() error {
	c.ctl.mu.Lock()
	c.ctl.conns.remove(c)
	c.ctl.mu.Unlock()
	return c.Conn.Close()
}

type connTable struct {
	open   int
	byAddr map[string]int
	fresh  *list.List // of *conn, oldest accept first
	idle   *list.List // of *conn whose last request was refused (or a probe), longest idle first
	served *list.List // of *conn whose last request was served, longest idle first
	// reading: connections whose request has begun to arrive (its first
	// byte read: conn.Read) and is not yet in a handler, oldest first. A
	// client sends its request as soon as it connects, so a connection
	// taken as fresh until its handler ran was closed under a flood of new
	// connections with the request in flight (EOF at the client; issue
	// 33's soak): one reading is closed only after readingGrace, as a
	// trickler.
	reading *list.List
}

// readingGrace is how long a request's headers may take to arrive before
// its connection may be closed to make room: far above a client's, far
// below the header timeout that ends a trickler anyway.
const readingGrace = time.Second

func newConnTable() connTable {
	return connTable{byAddr: map[string]int{}, fresh: list.New(), idle: list.New(), served: list.New(), reading: list.New()}
}

// remove counts cn out, once.
func (t *connTable) remove(cn *conn) {
	if cn.gone {
		return
	}
	cn.gone = true
	t.unlist(cn)
	t.open--
	if t.byAddr[cn.addr]--; t.byAddr[cn.addr] <= 0 {
		delete(t.byAddr, cn.addr)
	}
}

func (t *connTable) unlist(cn *conn) {
	if cn.elem == nil {
		return
	}
	cn.in.Remove(cn.elem)
	cn.elem, cn.in = nil, nil
}

// push lists cn at the back of l (the most recent).
func (t *connTable) push(l *list.List, cn *conn) {
	cn.elem, cn.in, cn.since = l.PushBack(cn), l, time.Now()
}

// victim is the connection to close for a new one: the oldest fresh one
// past freshGrace, else the longest idle of those whose last request was
// refused, else the longest idle of those served, else the one whose
// request has been arriving the longest, past readingGrace, else the oldest
// fresh one however young; nil when none is (every connection in a handler
// or just begun a request).
func (t *connTable) victim(freshGrace time.Duration) (*conn, int) {
	now := time.Now()
	if e := t.fresh.Front(); e != nil && now.Sub(e.Value.(*conn).since) >= freshGrace {
		return e.Value.(*conn), evictedFresh
	}
	if e := t.idle.Front(); e != nil {
		return e.Value.(*conn), evictedIdle
	}
	if e := t.served.Front(); e != nil {
		return e.Value.(*conn), evictedServed
	}
	if e := t.reading.Front(); e != nil && now.Sub(e.Value.(*conn).since) > readingGrace {
		return e.Value.(*conn), evictedReading
	}
	if e := t.fresh.Front(); e != nil {
		return e.Value.(*conn), evictedFresh
	}
	return nil, 0
}

// Listener wraps l with the connection budget.
func (c *Controller) Listener(l net.Listener) net.Listener {
	return &listener{Listener: l, ctl: c}
}

type listener struct {
	net.Listener
	ctl *Controller
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if cn := l.ctl.admit(nc); cn != nil {
			return cn, nil
		}
	}
}

// admit counts nc in, making room if the budget is spent; nil: refused
// (and closed).
func (c *Controller) admit(nc net.Conn) *conn {
	addr, loopback := clientKey(nc.RemoteAddr())
	perAddr := c.lim.MaxConnectionsPerAddress
	if loopback && !c.lim.CountLoopback {
		perAddr = -1
	}
	c.mu.Lock()
	if perAddr > 0 && c.conns.byAddr[addr] >= perAddr {
		c.mu.Unlock()
		c.metrics.refused[refusedPerAddress].Inc()
		c.logRefused("per_address", addr)
		_ = nc.Close()
		return nil
	}
	var victim *conn
	if c.lim.MaxConnections > 0 && c.conns.open >= c.lim.MaxConnections {
		var kind int
		if victim, kind = c.conns.victim(c.lim.FreshGrace); victim == nil {
			c.mu.Unlock()
			c.metrics.refused[refusedFull].Inc()
			c.logRefused("full", addr)
			_ = nc.Close()
			return nil
		}
		c.conns.remove(victim)
		c.metrics.evicted[kind].Inc()
	}
	cn := &conn{Conn: nc, ctl: c, addr: addr}
	c.conns.open++
	c.conns.byAddr[addr]++
	c.conns.push(c.conns.fresh, cn)
	c.mu.Unlock()
	if victim != nil {
		// Its server goroutine sees the read fail and ends; counted out above.
		_ = victim.Conn.Close()
	}
	return cn
}

// clientKey is what MaxConnectionsPerAddress counts a connection from ra
// under: its IPv4 address, or its IPv6 address's /64. An IPv6 client
// holds a whole /64 (what a home or a cloud instance is given; the host
// part is its own to pick), so a cap per /128 would bound nothing.
// loopback: a client of this machine.
func clientKey(ra net.Addr) (key string, loopback bool) {
	ap, err := netip.ParseAddrPort(ra.String())
	if err != nil {
		return ra.String(), false // not TCP/IP: one key per distinct address
	}
	a := ap.Addr().Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String(), a.IsLoopback()
	}
	return a.String(), a.IsLoopback()
}

// enter marks cn as inside a handler (not evictable).
func (c *Controller) enter(cn *conn) {
	if cn == nil {
		return
	}
	c.mu.Lock()
	c.conns.unlist(cn)
	cn.used = true
	c.mu.Unlock()
}

// ConnState is http.Server.ConnState: a connection whose answer has been
// written and that waits for its next request becomes idle, the most
// recently used last. (Not when its handler returns: its answer may still
// be in net/http's buffer, and a connection closed then would lose it.)
func (c *Controller) ConnState(nc net.Conn, state http.ConnState) {
	cn, ok := nc.(*conn)
	if !ok || state != http.StateIdle {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !cn.gone && cn.elem == nil {
		cn.begun.Store(false) // its next request's first byte makes it reading again
		l := c.conns.idle
		if cn.served {
			l = c.conns.served
		}
		c.conns.push(l, cn)
	}
}

// begin moves cn, whose request's first byte was just read, from the fresh
// or idle lists to reading (not while it is in a handler: a body's bytes).
func (c *Controller) begin(cn *conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cn.gone || cn.elem == nil || cn.in == c.conns.reading {
		return
	}
	c.conns.unlist(cn)
	c.conns.push(c.conns.reading, cn)
}

// logRefused logs a refused connection at most once a second per reason,
// like logShed.
func (c *Controller) logRefused(why, addr string) {
	c.refusedMu.Lock()
	now := time.Now().UnixNano()
	if c.refusedLast == nil {
		c.refusedLast, c.refusedSince = map[string]int64{}, map[string]int{}
	}
	c.refusedSince[why]++
	if now-c.refusedLast[why] < int64(1e9) {
		c.refusedMu.Unlock()
		return
	}
	n := c.refusedSince[why]
	c.refusedLast[why], c.refusedSince[why] = now, 0
	c.refusedMu.Unlock()
	c.log.Warn("connection refused", "reason", why, "remote", addr, "refused_since_last_line", n)
}

// served records how cn's request was answered: a connection whose last
// request (a health check aside) was answered below 400 is evicted after
// the others (see the connection budget above).
func (c *Controller) servedBy(cn *conn, class Class, code int) {
	if cn == nil || class == Health {
		if cn != nil {
			c.mu.Lock()
			cn.served = false
			c.mu.Unlock()
		}
		return
	}
	c.mu.Lock()
	cn.served = code > 0 && code < 400
	c.mu.Unlock()
}

// statusWriter remembers the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer
// (deadlines, flushes).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
