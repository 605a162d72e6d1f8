package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// DefaultUploadIdleTimeout is Config.UploadIdleTimeout's default
// (ONCELEDGER_UPLOAD_IDLE_TIMEOUT).
const DefaultUploadIdleTimeout = 30 * time.Second

// errUploadStalled: an upload sent no byte for the idle timeout (408).
var errUploadStalled = errors.New("upload stalled")

// stalledError names the limit and the variable that sets it.
type stalledError struct{ idle time.Duration }

func (e *stalledError) Error() string {
	return fmt.Sprintf("%s: no byte of the body for %s (ONCELEDGER_UPLOAD_IDLE_TIMEOUT); nothing imported", errUploadStalled, e.idle)
}

func (e *stalledError) Unwrap() error { return errUploadStalled }

// progressBody is an upload's body under a progress deadline. A report
// upload has no overall read deadline (it may take minutes on a slow
// link), so a client that stops sending would hold its connection and
// spool file forever (issue 33): each read must bring a byte within idle,
// the connection's read deadline being moved before every read.
type progressBody struct {
	r    io.ReadCloser
	rc   *http.ResponseController
	idle time.Duration
}

func newProgressBody(w http.ResponseWriter, r io.ReadCloser, idle time.Duration) *progressBody {
	if idle <= 0 {
		idle = DefaultUploadIdleTimeout
	}
	return &progressBody{r: r, rc: http.NewResponseController(w), idle: idle}
}

func (p *progressBody) Read(b []byte) (int, error) {
	_ = p.rc.SetReadDeadline(time.Now().Add(p.idle))
	n, err := p.r.Read(b)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		return n, &stalledError{idle: p.idle}
	}
	return n, err
}

func (p *progressBody) Close() error { return p.r.Close() }

// done lifts the deadline once the body is read: the import that follows
// reads nothing more from the client.
func (p *progressBody) done() { _ = p.rc.SetReadDeadline(time.Time{}) }
