package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/domain/delivery"
)

// Ingester records one verified delivery durably (ingest.Service).
type Ingester interface {
	// Ingest records ev's facts.
	Ingest(ctx context.Context, ev delivery.Event) (ingest.Result, error)
	// Hold stores ev durably as unverified, for a provider whose deliveries
	// carry no signature; a background verifier applies it later.
	Hold(ctx context.Context, ev delivery.Event) (ingest.Result, error)
}

func (s *server) webhook(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	name := mux.Vars(r)["provider"]
	log := webhookLog{l: s.log, provider: name, requestID: requestID(r.Context())}

	adapter, ok := s.cfg.Providers[name]
	if !ok {
		err := fmt.Errorf("%w: %q", errUnknownProvider, name)
		if s.cfg.Unconfigured != nil {
			if msg, known := s.cfg.Unconfigured(name); known {
				// A provider this build has, left unconfigured: say which
				// variables would configure it.
				err = fmt.Errorf("%w: %s", errUnknownProvider, msg)
			}
		}
		s.webhookError(w, r, name, start, log, err, nil)
		return
	}
	// The body is read, and its signature checked, before the request takes
	// one of its provider's slots: a slot is for recording, and a sender
	// that announces a body and trickles it (or sends none that verifies)
	// must never hold one, or a few dozen stalled uploads would lock a
	// provider out (issue 13). The read has its own deadline, so a stalled
	// upload ends with a 400 instead of holding a connection.
	body, err := s.readBody(w, r)
	if err != nil {
		s.webhookError(w, r, name, start, log, err, adapter)
		return
	}
	events, err := adapter.Parse(providers.Request{
		Header: r.Header,
		Body:   body,
		Now:    s.cfg.Now(),
		URL:    s.cfg.PublicURL(r),
	})
	if err != nil {
		s.webhookError(w, r, name, start, log, err, adapter)
		return
	}
	release, err := s.limiter.acquire(name)
	if err != nil {
		w.Header().Set("Retry-After", "1")
		s.webhookError(w, r, name, start, log, err, adapter)
		return
	}
	defer release()

	// The provider's retry is what recovers from a timeout: better a fast 503
	// than a hung connection the provider gives up on.
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.IngestTimeout)
	defer cancel()
	record := s.cfg.Ingester.Ingest
	if providers.Holds(adapter) {
		record = s.cfg.Ingester.Hold
	}
	outcome := ingest.Ignored
	for i, ev := range events {
		res, err := record(ctx, ev)
		if err != nil {
			if log.enabled(ctx, slog.LevelWarn) {
				log.log(ctx, slog.LevelWarn, "webhook not recorded", slog.String("dedup_key", ev.DedupKey),
					slog.String("stream", ev.StreamID()), slog.Int("item", i), slog.Any("error", err))
			}
			s.webhookError(w, r, name, start, log, err, adapter)
			return
		}
		if log.enabled(ctx, slog.LevelInfo) {
			log.log(ctx, slog.LevelInfo, "webhook", slog.String("dedup_key", ev.DedupKey), slog.String("type", ev.Type),
				slog.String("stream", res.StreamID), slog.String("outcome", string(res.Outcome)),
				slog.Bool("conflict", res.Conflict), slog.Int("appended", res.Appended),
				slog.Int64("latency_ms", time.Since(start).Milliseconds()))
		}
		if i == 0 || res.Outcome == ingest.Accepted {
			outcome = res.Outcome
		}
		if res.Conflict {
			s.metrics.conflicts.WithLabelValues(name).Inc()
		}
	}
	s.metrics.observeWebhook(name, string(outcome), start)
	ack, ok := adapter.(providers.Acknowledger)
	if !ok {
		writeOutcome(w, outcome)
		return
	}
	a := ack.Acknowledge(string(outcome))
	if a.Status == 0 {
		a.Status = http.StatusOK
	}
	writeAck(w, a)
}

// writeAck writes an answer an adapter shaped, with its status.
func writeAck(w http.ResponseWriter, a providers.Ack) {
	if a.ContentType != "" {
		w.Header().Set("Content-Type", a.ContentType)
	}
	w.WriteHeader(a.Status)
	if len(a.Body) > 0 {
		_, _ = w.Write(a.Body)
	}
}

// readBody reads the request body up to MaxBodyBytes within BodyTimeout.
// The deadline is the connection's (http.ResponseController), so a sender
// that stops sending is cut off even while a read is blocked; a handler
// that is not served over a connection (a recorder in a test) reads without
// one.
func (s *server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return nil, fmt.Errorf("%w: setting the body deadline: %v", delivery.ErrMalformed, err)
	}
	body, err := readAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes), r.ContentLength, s.cfg.MaxBodyBytes)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if !errors.As(err, &tooLarge) {
			err = fmt.Errorf("%w: reading body: %v", delivery.ErrMalformed, err)
		}
		return nil, err
	}
	return body, nil
}

// readAll is io.ReadAll into a buffer of the announced length (one byte
// more, for the read that meets the end), when the request announces one
// within limit: io.ReadAll starts at 512 bytes and doubles, five
// allocations and copies for a 2 kB delivery. What is announced is only a
// size hint: the reader, limited, decides what is read.
func readAll(r io.Reader, announced, limit int64) ([]byte, error) {
	size := int64(512)
	if announced >= 0 && announced < limit {
		size = announced + 1
	}
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow as append does
		}
	}
}

// webhookLog logs for one webhook request, with its provider and request
// id. Its attributes are only built when the level is enabled: a webhook is
// the hot path, and a logger's With formats them on every request, logged
// or not.
type webhookLog struct {
	l                   *slog.Logger
	provider, requestID string
}

func (w webhookLog) enabled(ctx context.Context, level slog.Level) bool {
	return w.l.Enabled(ctx, level)
}

func (w webhookLog) log(ctx context.Context, level slog.Level, msg string, attrs ...slog.Attr) {
	all := make([]slog.Attr, 0, len(attrs)+2)
	all = append(all, slog.String("provider", w.provider), slog.String("request_id", w.requestID))
	w.l.LogAttrs(ctx, level, msg, append(all, attrs...)...)
}

// outcomeBodies are the answers of a recorded webhook, encoded once.
var outcomeBodies = func() map[ingest.Outcome][]byte {
	m := map[ingest.Outcome][]byte{}
	for _, o := range []ingest.Outcome{ingest.Accepted, ingest.Duplicate, ingest.Ignored} {
		m[o], _ = json.Marshal(map[string]string{"status": string(o)})
	}
	return m
}()

// writeOutcome answers 200 {"status": outcome}.
func writeOutcome(w http.ResponseWriter, outcome ingest.Outcome) {
	b, ok := outcomeBodies[outcome]
	if !ok {
		writeJSON(w, http.StatusOK, map[string]string{"status": string(outcome)})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// webhookError answers a refused webhook with statusFor's status: in the
// adapter's own failure shape when it has one (providers.Refuser), else the
// JSON every endpoint answers. adapter is nil for an unknown provider.
func (s *server) webhookError(w http.ResponseWriter, r *http.Request, name string, start time.Time, log webhookLog, err error, adapter providers.Adapter) {
	status := statusFor(err)
	s.metrics.observeWebhook(name, outcomeLabel(status), start)
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelWarn
	}
	if log.enabled(r.Context(), level) {
		log.log(r.Context(), level, "webhook refused", slog.Int("status", status), slog.Any("error", err),
			slog.Int64("latency_ms", time.Since(start).Milliseconds()))
	}
	if status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "5")
	}
	if ref, ok := adapter.(providers.Refuser); ok {
		a := ref.Failure(publicError(status, err))
		a.Status = status
		writeAck(w, a)
		return
	}
	writeError(w, status, publicError(status, err))
}

func outcomeLabel(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusBadRequest:
		return "bad_request"
	case http.StatusNotFound:
		return "not_found"
	case http.StatusRequestEntityTooLarge:
		return "too_large"
	default:
		return "unavailable"
	}
}

// errNotDurable is what a provider is told when its delivery could not be
// recorded: the cause (a database error, an address) stays in the logs.
var errNotDurable = errors.New("could not record the delivery durably; retry later")

// publicError is the error shown in an answer: the error itself for the
// sender's mistakes (4xx) and for overload, a generic one for the rest.
func publicError(status int, err error) error {
	if status < 500 || errors.Is(err, errOverloaded) || errors.Is(err, ingest.ErrContention) {
		return err
	}
	return errNotDurable
}
