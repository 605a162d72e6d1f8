package main_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/admission"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/standard"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
)

// Issue 33, finding 3: connection slots could all be held, by idle
// keep-alive connections without any token or by long polls, and then
// /healthz and webhooks waited (up to the idle timeout, 120 s, or the
// poll's wait). adapters/admission holds its own tests; these two run the
// served app as serve runs it.

// admissionDeadline bounds what must be answered at once: a correctness
// bound, a request stuck behind the held connections waits a minute or two.
const admissionDeadline = 5 * time.Second

const admissionReadToken = "tok-admission-read-0123456789"

// holdConnections opens n connections to addr at once, each sending req
// and reading its answer (or giving up after the deadline), and keeps
// them open until the test ends. It returns how many were answered with
// status, and with a Retry-After.
func holdConnections(t *testing.T, addr string, n int, req string, status int) (answered, retryAfter int64) {
	t.Helper()
	var a, ra atomic.Int64
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			c, err := net.DialTimeout("tcp", addr, admissionDeadline)
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			if _, err := io.WriteString(c, req); err != nil {
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(admissionDeadline))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return // a long poll still waiting, or a connection closed to make room
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == status {
				a.Add(1)
				if resp.Header.Get("Retry-After") != "" {
					ra.Add(1)
				}
			}
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return a.Load(), ra.Load()
}

// probeAndDeliver checks that /healthz and a signed webhook, each on a new
// connection, are answered 200 within the deadline.
func probeAndDeliver(t *testing.T, addr string) {
	t.Helper()
	client := &http.Client{Timeout: admissionDeadline, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + addr + "/healthz")
	require.NoError(t, err, "/healthz is answered at once")
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	id := uniq("msg_admission")
	body := standardBody("payment.captured", map[string]any{
		"payment_id": uniq("pay"), "capture_id": uniq("cap"), "amount": 1000, "currency": "USD"})
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/webhooks/standard", bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range standardDelivery(t, id, body, time.Now()) {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err = client.Do(req)
	require.NoError(t, err, "a signed webhook is answered at once")
	got, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, string(got))
}

func admissionApp(t *testing.T) string {
	t.Helper()
	sw, err := standard.New([]string{standardSecret}, 5*time.Minute)
	require.NoError(t, err)
	_, addr := servedApp(t, app.Config{
		DatabaseURL:     pgtest.NewDatabase(t),
		Providers:       map[string]providers.Adapter{standard.Name: sw},
		APITokens:       []string{"reader=" + admissionReadToken},
		Logger:          testLogger(),
		ReadTimeout:     time.Minute,
		ShutdownTimeout: time.Second,
	})
	return addr
}

// TestIdleConnectionsCannotKeepOutProbesAndWebhooks: 1,030 keep-alive
// connections without a token (each answered 401, then idle) past the
// 1,024 of ONCELEDGER_MAX_CONNECTIONS: a probe and a signed webhook are
// still answered at once. Before, they waited behind the idle ones for the
// idle timeout (120 s).
func TestIdleConnectionsCannotKeepOutProbesAndWebhooks(t *testing.T) {
	addr := admissionApp(t)
	unauthorized, _ := holdConnections(t, addr, 1030,
		fmt.Sprintf("GET /v1/events HTTP/1.1\r\nHost: %s\r\n\r\n", addr), http.StatusUnauthorized)
	assert.Positive(t, unauthorized)
	probeAndDeliver(t, addr)
}

// TestLongPollsCannotKeepOutProbesAndWebhooks: 1,030 long polls with a
// read token: ONCELEDGER_MAX_LONG_POLLS_PER_TOKEN of them wait, the others
// are answered 429 with Retry-After at once, and a probe and a signed
// webhook are answered. Before, the polls held every connection for their
// wait (60 s).
func TestLongPollsCannotKeepOutProbesAndWebhooks(t *testing.T) {
	addr := admissionApp(t)
	refused, withRetry := holdConnections(t, addr, 1030,
		fmt.Sprintf("GET /v1/events?wait=60s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", addr, admissionReadToken),
		http.StatusTooManyRequests)
	assert.Positive(t, refused, "polls past the token's cap are refused")
	assert.Equal(t, refused, withRetry, "each refusal says when to retry")
	probeAndDeliver(t, addr)
}

// TestShedWebhookIsAnsweredBeforeItsBody: with the webhooks' in-flight
// budget held by two uploads that stall, a third delivery that sends its
// headers and never its body is answered 503 with Retry-After at once, not
// after the body deadline (a minute here); a probe is still answered.
// Before, every delivery's body was read and verified before any limit
// applied (issue 40, item 3: a refused request paid for its body).
func TestShedWebhookIsAnsweredBeforeItsBody(t *testing.T) {
	sw, err := standard.New([]string{standardSecret}, 5*time.Minute)
	require.NoError(t, err)
	_, addr := servedApp(t, app.Config{
		DatabaseURL:     pgtest.NewDatabase(t),
		Providers:       map[string]providers.Adapter{standard.Name: sw},
		Logger:          testLogger(),
		ReadTimeout:     time.Minute,
		ShutdownTimeout: time.Second,
		Admission:       admission.Limits{MaxInFlight: 2, QueueWait: -1},
	})
	for range 2 {
		_, reading := stallUpload(t, addr)
		require.True(t, reading, "the stalled upload holds a slot, reading its body")
	}
	c, err := net.DialTimeout("tcp", addr, admissionDeadline)
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "POST /webhooks/standard HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", addr)
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(admissionDeadline)))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err, "answered without its body")
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))

	client := &http.Client{Timeout: admissionDeadline}
	hz, err := client.Get("http://" + addr + "/healthz")
	require.NoError(t, err)
	_ = hz.Body.Close()
	assert.Equal(t, http.StatusOK, hz.StatusCode, "health checks are never shed")
}
