package httpapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// generated is an upload body of n bytes made as it is read (never held),
// failing with err after them when err is set (a connection cut short).
type generated struct {
	n, read int64
	err     error
}

func (g *generated) Read(p []byte) (int, error) {
	if g.read >= g.n {
		if g.err != nil {
			return 0, g.err
		}
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), g.n-g.read))
	for i := range p[:k] {
		p[i] = 'a' + byte((g.read+int64(i))%26)
	}
	g.read += int64(k)
	return k, nil
}

// spoolChecker is an importer that checks what the handler gives it: the
// whole body, already read (spooled), to read twice.
type spoolChecker struct {
	t      *testing.T
	body   *generated
	called bool
	sizes  []int64
	heap   uint64
}

func (c *spoolChecker) ImportReport(_ context.Context, _ string, src ReportSource) (ImportSummary, error) {
	c.called = true
	assert.Equal(c.t, c.body.n, c.body.read, "the body is read whole before the import starts")
	c.heap = heapInUse()
	for range 2 { // validate, then import
		r, err := src()
		require.NoError(c.t, err)
		n, err := io.Copy(io.Discard, r)
		require.NoError(c.t, err)
		c.sizes = append(c.sizes, n)
		require.NoError(c.t, r.Close())
	}
	return ImportSummary{Lines: 1}, nil
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestUploadIsSpooledNotHeld (issue 24, item 14): POST
// /v1/settlements/{provider} spools the body to a temporary file as it
// reads it and imports from the file: a 64 MiB upload is read whole before
// the import starts, the import reads all of it twice, and the heap holds
// far less than the body meanwhile; an upload cut short imports nothing.
func TestUploadIsSpooledNotHeld(t *testing.T) {
	const size = 64 << 20
	post := func(body io.Reader, imp SettlementImporter) *httptest.ResponseRecorder {
		cfg := Config{Logger: slog.New(slog.DiscardHandler), AdminTokens: []string{"alice=a-secret"}, Settlements: imp}
		req := httptest.NewRequest(http.MethodPost, "/v1/settlements/stripe", body)
		req.Header.Set("Authorization", "Bearer a-secret")
		rec := httptest.NewRecorder()
		NewHandler(cfg).ServeHTTP(rec, req)
		return rec
	}
	before := heapInUse()
	body := &generated{n: size}
	c := &spoolChecker{t: t, body: body}
	rec := post(body, c)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.True(t, c.called)
	assert.Equal(t, []int64{size, size}, c.sizes, "validated and imported from the whole spooled file")
	grew := int64(c.heap) - int64(before)
	assert.Less(t, grew, int64(size/4), "heap grew by %d bytes for a %d-byte upload", grew, size)

	cut := &spoolChecker{t: t, body: &generated{n: 1 << 20, err: errors.New("connection reset")}}
	rec = post(cut.body, cut)
	assert.GreaterOrEqual(t, rec.Code, 400, rec.Body.String())
	assert.False(t, cut.called, "an upload cut short imports nothing")
}
