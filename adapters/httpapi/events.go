package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/onceledger/onceledger/projections/outbound"
)

// The outbound business events on /v1 (docs/events.md): the pull feed
// GET /v1/events with its opaque cursor and long poll, and the public types
// with an example each.

// EventFeed pages through the outbound events (outbound.Feed).
type EventFeed interface {
	Page(ctx context.Context, q outbound.Query) (outbound.Page, error)
}

var _ EventFeed = (*outbound.Feed)(nil)

func (s *server) registerEvents(v1 *mux.Router) {
	v1.HandleFunc("/events", s.queryEvents).Methods(http.MethodGet)
	v1.HandleFunc("/events/types", s.queryEventTypes).Methods(http.MethodGet)
}

// eventsPage is GET /v1/events's answer. next is always there: on an empty
// page it is where the page ended (after what a type filter skipped), so
// a client can always pass it back.
type eventsPage struct {
	Events []outbound.Event `json:"events"`
	Next   string           `json:"next"`
}

func (s *server) queryEvents(w http.ResponseWriter, r *http.Request) {
	q, err := parseEventsQuery(r)
	if err != nil {
		fail(w, err)
		return
	}
	if s.cfg.Outbound == nil {
		fail(w, errQueryNotConfigured)
		return
	}
	if q.Wait > 0 {
		// The server's write timeout is sized for ingestion; a long poll
		// may outlast it. Error ignored: a writer without deadlines (a
		// test recorder) has none to extend.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(q.Wait + 15*time.Second))
	}
	page, err := s.cfg.Outbound.Page(r.Context(), q)
	if err != nil {
		if errors.Is(err, outbound.ErrUnknownType) || errors.Is(err, outbound.ErrTooManyTypes) {
			err = fmt.Errorf("%w: type: %w", errBadParameter, err)
		}
		fail(w, err)
		return
	}
	out := eventsPage{Events: page.Events, Next: outbound.Cursor(page.Next)}
	if out.Events == nil {
		out.Events = []outbound.Event{}
	}
	writeJSON(w, http.StatusOK, out)
}

func parseEventsQuery(r *http.Request) (outbound.Query, error) {
	v := r.URL.Query()
	var q outbound.Query
	var err error
	if q.After, err = outbound.ParseCursor(v.Get("after")); err != nil {
		return q, fmt.Errorf("%w: after: %w", errBadParameter, err)
	}
	// Deduplicated as they are read, and refused past the vocabulary's
	// size: `type=` repeated 60,000 times cost a second of CPU per page.
	seen := map[string]bool{}
	for _, t := range v["type"] {
		for one := range strings.SplitSeq(t, ",") {
			if one = strings.TrimSpace(one); one != "" && !seen[one] {
				if len(seen) == outbound.VocabularySize() {
					return q, fmt.Errorf("%w: type: at most %d distinct types (the vocabulary's size)", errBadParameter, outbound.VocabularySize())
				}
				seen[one] = true
				q.Types = append(q.Types, one)
			}
		}
	}
	if l := v.Get("limit"); l != "" {
		if q.Limit, err = strconv.Atoi(l); err != nil || q.Limit < 1 {
			return q, fmt.Errorf("%w: limit: a positive integer, at most %d", errBadParameter, outbound.MaxLimit)
		}
	}
	if d := v.Get("wait"); d != "" {
		if q.Wait, err = time.ParseDuration(d); err != nil || q.Wait < 0 || q.Wait > outbound.MaxWait {
			return q, fmt.Errorf("%w: wait: a duration such as 5s, at most %s", errBadParameter, outbound.MaxWait)
		}
	}
	return q, nil
}

// eventTypes is GET /v1/events/types's answer.
type eventTypes struct {
	Version int                 `json:"version"`
	Types   []outbound.TypeInfo `json:"types"`
}

func (s *server) queryEventTypes(w http.ResponseWriter, _ *http.Request) {
	infos, err := outbound.Examples()
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, eventTypes{Version: outbound.Version, Types: infos})
}
