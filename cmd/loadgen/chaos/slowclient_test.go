package chaos

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bodySize is the Content-Length every raw request announces: each body is a
// valid, signed delivery padded with JSON whitespace to exactly this size, so
// only its incompleteness can keep it out.
const bodySize = 1000

// serverReadTimeout is serve's http.Server ReadTimeout (cmd/onceledger/serve.go);
// ONCELEDGER_CHAOS_READ_TIMEOUT overrides it if serve's changes.
func serverReadTimeout(t *testing.T) time.Duration {
	t.Helper()
	if s := os.Getenv("ONCELEDGER_CHAOS_READ_TIMEOUT"); s != "" {
		d, err := time.ParseDuration(s)
		require.NoError(t, err, "ONCELEDGER_CHAOS_READ_TIMEOUT=%q", s)
		require.Positive(t, d, "ONCELEDGER_CHAOS_READ_TIMEOUT=%q", s)
		return d
	}
	return 15 * time.Second
}

// rawHead is the request head of d with its signature, announcing bodySize bytes.
func rawHead(t *testing.T, s *sender, addr string, d *delivery) []byte {
	t.Helper()
	h := http.Header{}
	s.signer.Headers(h, d.id, time.Now(), d.body)
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST /webhooks/%s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", provider, addr, len(d.body))
	for _, k := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
		fmt.Fprintf(&b, "%s: %s\r\n", k, h.Get(k))
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// padded copies d with its body padded to bodySize (trailing JSON whitespace).
func padded(t *testing.T, d *delivery) *delivery {
	t.Helper()
	require.LessOrEqual(t, len(d.body), bodySize, "body of %s is %d bytes, above %d", d.id, len(d.body), bodySize)
	c := *d
	c.body = append(bytes.Clone(d.body), bytes.Repeat([]byte(" "), bodySize-len(d.body))...)
	return &c
}

// TestSlowAndDisconnectingClients proves that an incomplete request leaves
// nothing behind: clients that disconnect after the head, in the middle of
// the body (FIN or RST), that half-close their side, or that trickle the body
// past the server's read timeout produce no inbox row and no event. Then the
// very same deliveries, sent properly, are accepted as first arrivals: the
// bodies were valid, only incomplete.
func TestSlowAndDisconnectingClients(t *testing.T) {
	r, cancel := beginChaos(t, 5*time.Minute, true)
	defer cancel()
	start, ctx, k, srv, pool := r.start, r.ctx, r.k, r.srv, r.pool
	s := newSender(t, srv, 8, func(answer) bool { return false })

	// Captures only: each one, if it got in, would show as an inbox row and
	// an event.
	w := newWorkload(t, loggedSeed(t), 60*k)
	var ds []*delivery
	for _, d := range w.all {
		if d.typ == "payment.captured" && d.fact != nil {
			ds = append(ds, padded(t, d))
		}
	}
	c := &incompleteClients{t: t, s: s, srv: srv, readTimeout: serverReadTimeout(t)}
	nSlow := min(4*k, 16) // each holds one of serve's per-provider slots
	require.GreaterOrEqual(t, len(ds), nSlow+8, "workload too small: %d captures", len(ds))

	// At most 32 quick clients at a time: with the trickling ones they stay
	// below serve's per-provider concurrency limit, whose 503 would answer
	// before the body is read and prove nothing.
	var wg sync.WaitGroup
	quick := make(chan struct{}, 32)
	modes := []string{"head-only", "half-body-fin", "half-body-rst", "half-body-closewrite"}
	for i, d := range ds[nSlow:] {
		mode := modes[i%len(modes)]
		wg.Go(func() {
			quick <- struct{}{}
			defer func() { <-quick }()
			c.cutShort(d, mode)
		})
	}
	for _, d := range ds[:nSlow] {
		wg.Go(func() { c.trickle(d) })
	}
	wg.Wait()
	c.requireAllRefused()

	// Handlers of the cut requests have returned by the time the server
	// closed the connections; give stragglers a moment anyway.
	time.Sleep(300 * time.Millisecond)
	inbox, events := countRows(ctx, t, pool)
	require.True(t, inbox == 0 && events == 0, "incomplete requests left %d webhook_inbox rows and %d events behind; want none", inbox, events)

	// The same deliveries, complete: every one is a first arrival.
	for _, d := range ds {
		a := s.post(ctx, 0, d)
		assert.True(t, a.status == http.StatusOK && a.result == "accepted",
			"%s sent properly after its incomplete attempt: %d %q %v, want 200 accepted", d.id, a.status, a.result, a.err)
	}
	inbox, events = countRows(ctx, t, pool)
	assert.True(t, inbox == len(ds) && events >= len(ds),
		"after proper delivery: %d inbox rows, %d events; want %d rows and at least as many events", inbox, events, len(ds))
	t.Logf("%d incomplete requests (%d trickled past the %v read timeout), nothing stored; in %v",
		len(ds), nSlow, c.readTimeout, time.Since(start).Round(time.Millisecond))
}

// incompleteClients send requests that never complete, and record how the
// server took each.
type incompleteClients struct {
	t           *testing.T
	s           *sender
	srv         *server
	readTimeout time.Duration

	mu       sync.Mutex
	outcomes []clientOutcome
}

// clientOutcome is how the server took one incomplete request (bad: not
// refused as it should be).
type clientOutcome struct {
	id, mode, what string
	bad            bool
}

func (c *incompleteClients) record(o clientOutcome) {
	c.mu.Lock()
	c.outcomes = append(c.outcomes, o)
	c.mu.Unlock()
}

func (c *incompleteClients) dial() (*net.TCPConn, error) {
	conn, err := net.DialTimeout("tcp", c.srv.addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return conn.(*net.TCPConn), nil
}

// cutShort sends d's head (and half its body unless mode is head-only),
// then disconnects as mode says: FIN, RST, or a half-close, which the
// server must answer 400 (bad request), neither 2xx nor 503.
func (c *incompleteClients) cutShort(d *delivery, mode string) {
	conn, err := c.dial()
	if err != nil {
		c.record(clientOutcome{d.id, mode, "dial: " + err.Error(), true})
		return
	}
	defer conn.Close()
	msg := rawHead(c.t, c.s, c.srv.addr, d)
	if mode != "head-only" {
		msg = append(msg, d.body[:bodySize/2]...)
	}
	if _, err := conn.Write(msg); err != nil {
		c.record(clientOutcome{d.id, mode, "write: " + err.Error(), true})
		return
	}
	switch mode {
	case "half-body-rst":
		_ = conn.SetLinger(0) // Close sends RST
	case "half-body-closewrite":
		// The server sees EOF before Content-Length.
		_ = conn.CloseWrite()
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			c.record(clientOutcome{d.id, mode, "no answer: " + err.Error(), true})
			return
		}
		resp.Body.Close()
		c.record(clientOutcome{d.id, mode, resp.Status, resp.StatusCode != http.StatusBadRequest})
		return
	}
	c.record(clientOutcome{d.id, mode, "closed", false})
}

// trickle sends d's head and half its body, then the rest one byte at a
// time, finishing well after the read timeout: a server without one would
// accept it at the end.
func (c *incompleteClients) trickle(d *delivery) {
	conn, err := c.dial()
	if err != nil {
		c.record(clientOutcome{d.id, "trickle", "dial: " + err.Error(), true})
		return
	}
	defer conn.Close()
	answered := make(chan string, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			answered <- "closed: " + err.Error()
			return
		}
		resp.Body.Close()
		answered <- resp.Status
	}()
	began := time.Now()
	if _, err := conn.Write(append(rawHead(c.t, c.s, c.srv.addr, d), d.body[:bodySize/2]...)); err != nil {
		c.record(clientOutcome{d.id, "trickle", "write: " + err.Error(), true})
		return
	}
	rest := d.body[bodySize/2:]
	every := (c.readTimeout + 5*time.Second) / time.Duration(len(rest))
	for i := range rest {
		select {
		case a := <-answered:
			ok := !strings.HasPrefix(a, "2")
			c.record(clientOutcome{d.id, "trickle", fmt.Sprintf("cut off after %d of %d bytes, %v after the head: %s", bodySize/2+i, bodySize, time.Since(began).Round(time.Millisecond), a), !ok})
			return
		case <-time.After(every):
		}
		if _, err := conn.Write(rest[i : i+1]); err != nil {
			c.record(clientOutcome{d.id, "trickle", fmt.Sprintf("write refused after %d of %d bytes: %v", bodySize/2+i, bodySize, err), false})
			return
		}
	}
	select {
	case a := <-answered:
		c.record(clientOutcome{d.id, "trickle", "whole body trickled over " + (c.readTimeout + 5*time.Second).String() + ", then: " + a, true})
	case <-time.After(15 * time.Second):
		c.record(clientOutcome{d.id, "trickle", "whole body trickled, no answer", true})
	}
}

// requireAllRefused fails with every request the server did not refuse.
func (c *incompleteClients) requireAllRefused() {
	t := c.t
	var bad []string
	counts := map[string]int{}
	for _, o := range c.outcomes {
		counts[o.mode]++
		if o.bad {
			bad = append(bad, fmt.Sprintf("%s %s: %s", o.mode, o.id, o.what))
		} else if o.mode == "trickle" {
			t.Logf("trickle %s: %s", o.id, o.what)
		}
	}
	t.Logf("incomplete requests per mode: %v", counts)
	assert.Empty(t, bad, "%d clients were not refused as they should be:\n  %s", len(bad), strings.Join(bad, "\n  "))
}
