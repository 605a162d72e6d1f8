package httpapi

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/onceledger/onceledger/adapters/bookexport"
)

// GET /v1/export/{format}?from=&to=: the journal of a range of accounting
// dates in an accountant's tool's import format (bookexport).

// Exporter writes an export (bookexport.Exporter).
type Exporter interface {
	Export(ctx context.Context, req bookexport.Request, w io.Writer) error
}

var _ Exporter = (*bookexport.Exporter)(nil)

// The exports' errors, as statusFor (errors.go) maps them.
var (
	errExportRange    = bookexport.ErrBadRange
	errExportFormat   = bookexport.ErrUnknownFormat
	errExportUnmapped = bookexport.ErrUnmappedAccount
)

func (s *server) registerExport(v1 *mux.Router) {
	v1.HandleFunc("/export/{format}", s.queryExport).Methods(http.MethodGet)
}

// exportWriteGrace is how long an export's answer may take to accept its
// next bytes. A year of entries takes minutes to stream, beyond the
// server's write timeout (sized for webhooks): the deadline moves on as
// the answer makes progress, and a client that stops reading is still cut
// off.
const exportWriteGrace = 2 * time.Minute

// lazyAnswer starts the answer (headers, 200) at its first byte, so that
// an export refused before it writes anything (an account the table
// cannot name) is still an error answer with its status.
type lazyAnswer struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	format   bookexport.Format
	started  bool
	extended time.Time
}

func (a *lazyAnswer) Write(p []byte) (int, error) {
	if now := time.Now(); now.Sub(a.extended) > time.Second {
		a.extended = now
		_ = a.rc.SetWriteDeadline(now.Add(exportWriteGrace))
	}
	if !a.started {
		a.started = true
		a.w.Header().Set("Content-Type", a.format.ContentType())
		a.w.Header().Set("Content-Disposition", `attachment; filename="onceledger.`+a.format.Extension()+`"`)
		a.w.WriteHeader(http.StatusOK)
	}
	return a.w.Write(p)
}

func (s *server) queryExport(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	f, err := bookexport.ParseFormat(mux.Vars(r)["format"])
	if err != nil {
		q.Fail("format: %v", err)
	}
	for _, name := range []string{"from", "to"} {
		if q.Get(name) == "" {
			q.Fail("%s: required, a date like 2026-11-01 (to: the day after the last)", name)
		}
	}
	req := bookexport.Request{Format: f, From: q.Day("from", s.zone(), false), To: q.Day("to", s.zone(), false)}
	if q.Err() == nil && !req.To.After(req.From) {
		q.Fail("to: must be after from")
	}
	if q.Err() != nil {
		s.queryError(w, r, q.Err())
		return
	}
	if s.cfg.Export == nil {
		s.queryError(w, r, errQueryNotConfigured)
		return
	}
	out := &lazyAnswer{w: w, rc: http.NewResponseController(w), format: f, extended: time.Now()}
	// The first rows come after the database has sorted the range.
	_ = out.rc.SetWriteDeadline(out.extended.Add(exportWriteGrace))
	err = s.cfg.Export.Export(r.Context(), req, out)
	if err == nil {
		return
	}
	if !out.started {
		s.queryError(w, r, err)
		return
	}
	s.log.Warn("export aborted", "path", r.URL.Path, "error", err, "request_id", requestID(r.Context()))
	panic(http.ErrAbortHandler)
}
