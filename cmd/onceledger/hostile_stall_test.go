package main_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/standard"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
)

// servedApp runs the app's own server (app.Serve: its timeouts, its bounded
// listener) on a local port until the test ends.
func servedApp(t *testing.T, cfg app.Config) (*app.App, string) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	a := newApp(t, cfg)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- a.Serve(ctx, l) }()
	t.Cleanup(func() {
		stop()
		<-served
	})
	return a, l.Addr().String()
}

// stallUpload opens a connection that announces a body of 1000 bytes and
// returns once the handler is reading it: the client asks for
// "100-continue", which Go's server sends only when the handler first reads
// the body. Then one byte is sent, and nothing more. It returns false when
// the server answered instead of reading (a 503 for want of a slot).
func stallUpload(t *testing.T, addr string) (*bufio.Reader, bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = fmt.Fprintf(c, "POST /webhooks/standard HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Content-Length: 1000\r\nExpect: 100-continue\r\n\r\n", addr)
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(30*time.Second)))
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	if !strings.HasPrefix(line, "HTTP/1.1 100") {
		return r, false
	}
	blank, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "\r\n", blank)
	_, err = c.Write([]byte("{"))
	require.NoError(t, err)
	return r, true
}

// TestStalledUploadsCannotLockAProviderOut: 100 connections that announce a
// body and send one byte (more than the provider's 64 slots) are all in the
// webhook handler; a signed delivery of the same provider still gets 200,
// within a second. Before issue 13 each stalled upload took a slot before
// its body was read, and the signed delivery got 503.
func TestStalledUploadsCannotLockAProviderOut(t *testing.T) {
	sw, err := standard.New([]string{standardSecret}, 5*time.Minute)
	require.NoError(t, err)
	_, addr := servedApp(t, app.Config{
		DatabaseURL: pgtest.NewDatabase(t),
		Providers:   map[string]providers.Adapter{standard.Name: sw},
		Logger:      testLogger(),
		// Long enough that no stalled upload is cut off during the test.
		ReadTimeout:     time.Minute,
		ShutdownTimeout: time.Second,
	})
	reading := 0
	for range 100 {
		if _, ok := stallUpload(t, addr); ok {
			reading++
		}
	}
	assert.Equal(t, 100, reading, "every stalled upload is in the handler, reading its body")

	id := uniq("msg_stall")
	body := standardBody("payment.captured", map[string]any{
		"payment_id": uniq("pay"), "capture_id": uniq("cap"), "amount": 1000, "currency": "USD"})
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/webhooks/standard", bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range standardDelivery(t, id, body, time.Now()) {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	// The bound is a correctness deadline: a delivery stuck behind the
	// stalled uploads would wait for their body deadline (a minute here).
	client := &http.Client{Timeout: time.Second}
	resp, err := client.Do(req)
	require.NoError(t, err, "a signed delivery is answered within a second while 100 uploads stall")
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusOK, resp.StatusCode, string(got))
	assert.JSONEq(t, `{"status":"accepted"}`, string(got))
}

// TestStalledUploadIsCutOff: a body that stops arriving ends with a 400
// after the body deadline, so it frees its connection.
func TestStalledUploadIsCutOff(t *testing.T) {
	sw, err := standard.New([]string{standardSecret}, 5*time.Minute)
	require.NoError(t, err)
	_, addr := servedApp(t, app.Config{
		DatabaseURL:     pgtest.NewDatabase(t),
		Providers:       map[string]providers.Adapter{standard.Name: sw},
		Logger:          testLogger(),
		ReadTimeout:     200 * time.Millisecond,
		ShutdownTimeout: time.Second,
	})
	r, ok := stallUpload(t, addr)
	require.True(t, ok)
	resp, err := http.ReadResponse(r, nil)
	require.NoError(t, err, "the server answers the stalled upload")
	defer resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}
