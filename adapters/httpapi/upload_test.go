package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingImporter counts imports and reads the whole report.
type countingImporter struct{ calls atomic.Int32 }

func (c *countingImporter) ImportReport(_ context.Context, _ string, src ReportSource) (ImportSummary, error) {
	c.calls.Add(1)
	rc, err := src()
	if err != nil {
		return ImportSummary{}, err
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, rc)
	return ImportSummary{}, err
}

// Issue 33, finding 8: an admin upload that stops sending its body is cut
// off after the idle timeout with 408 naming the variable, and nothing is
// imported; one that keeps sending is imported.
func TestStalledUploadIs408(t *testing.T) {
	imp := &countingImporter{}
	h := NewHandler(Config{Logger: slog.New(slog.DiscardHandler), AdminTokens: []string{"alice=a-secret"},
		Settlements: imp, UploadIdleTimeout: 200 * time.Millisecond})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	stallUpload(t, srv, "/v1/settlements/stripe") // Content-Length promises 1,000 bytes; 10 come, then nothing
	assert.Zero(t, imp.calls.Load(), "nothing imported")

	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/settlements/stripe", strings.NewReader(strings.Repeat("x", 100_000)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer a-secret")
	ok, err := srv.Client().Do(req)
	require.NoError(t, err)
	ok.Body.Close()
	assert.Equal(t, http.StatusOK, ok.StatusCode)
	assert.Equal(t, int32(1), imp.calls.Load())
}

// countingBank counts bank statement imports.
type countingBank struct{ calls atomic.Int32 }

func (c *countingBank) ImportBankStatement(_ context.Context, _ string, src ReportSource) (BankImportSummary, error) {
	c.calls.Add(1)
	rc, err := src()
	if err != nil {
		return BankImportSummary{}, err
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, rc)
	return BankImportSummary{}, err
}

// A bank statement upload is an upload like a settlement report: one that
// sends no byte for ONCELEDGER_UPLOAD_IDLE_TIMEOUT is cut off with 408 and
// imports nothing (it held the connection and a spool file for ever).
func TestStalledBankStatementIs408(t *testing.T) {
	bank := &countingBank{}
	h := NewHandler(Config{Logger: slog.New(slog.DiscardHandler), AdminTokens: []string{"alice=a-secret"},
		BankStatements: bank, UploadIdleTimeout: 200 * time.Millisecond})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	stallUpload(t, srv, "/v1/bank-statements?account=main")
	assert.Zero(t, bank.calls.Load(), "nothing imported")
}

// stallUpload sends an admin upload to path whose Content-Length promises
// 1,000 bytes of which 10 come, then nothing, and requires the 408 naming
// ONCELEDGER_UPLOAD_IDLE_TIMEOUT.
func stallUpload(t *testing.T, srv *httptest.Server, path string) {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a-secret\r\n"+
		"Content-Length: 1000\r\n\r\n0123456789", path)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second))) // the test's own guard
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode, string(body))
	assert.Contains(t, string(body), "ONCELEDGER_UPLOAD_IDLE_TIMEOUT")
}
