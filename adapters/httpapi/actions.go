package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/domain/payment"
)

// ReconActions resolves and reopens reconciliation items, each as an event
// in the item's stream (operations.Reconciliation).
type ReconActions interface {
	Resolve(ctx context.Context, a operations.ItemAction) (payment.Resolved, error)
	Reopen(ctx context.Context, a operations.ItemAction) (payment.Reopened, error)
}

// InboxRedriver re-drives stored deliveries with the current code
// (ingest.Redriver).
type InboxRedriver interface {
	Redrive(ctx context.Context, f ingest.RedriveFilter, actor string) (ingest.RedriveCounts, error)
}

var (
	_ ReconActions  = (*operations.Reconciliation)(nil)
	_ InboxRedriver = (*ingest.Redriver)(nil)
)

// MaxNote bounds an action's note: it is stored in an event forever.
const MaxNote = 1000

type itemActionBody struct {
	ID   string `json:"id"`
	Note string `json:"note"`
}

// itemActionJSON answers resolve and reopen.
type itemActionJSON struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Actor  string `json:"actor"`
	Note   string `json:"note"`
}

// POST /v1/reconciliation/resolve and /v1/reconciliation/reopen (admin).
// Resolving a resolved item (or reopening an open one) is a 409: the
// caller acted on a state that is not the current one, and a second
// resolution with another note must not silently replace the first.
func (s *server) itemAction(resolve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Recon == nil {
			fail(w, errQueryNotConfigured)
			return
		}
		var body itemActionBody
		if err := decodeActionBody(w, r, &body); err != nil {
			fail(w, err)
			return
		}
		note := strings.TrimSpace(body.Note)
		switch {
		case body.ID == "":
			fail(w, fmt.Errorf("%w: id is required (as GET /v1/reconciliation lists it)", errBadParameter))
			return
		case note == "":
			fail(w, fmt.Errorf("%w: note is required: say why", payment.ErrNoteRequired))
			return
		case utf8.RuneCountInString(note) > MaxNote:
			fail(w, fmt.Errorf("%w: note is longer than %d characters", errBadParameter, MaxNote))
			return
		}
		p, _ := Principal(r.Context())
		a := operations.ItemAction{ID: body.ID, Actor: p.Actor, Note: note}
		out := itemActionJSON{ID: body.ID, Actor: a.Actor, Note: note}
		var err error
		if resolve {
			_, err = s.cfg.Recon.Resolve(r.Context(), a)
			out.Status = "resolved"
		} else {
			_, err = s.cfg.Recon.Reopen(r.Context(), a)
			out.Status = "open"
		}
		if err != nil {
			s.log.Info("reconciliation action refused", "id", body.ID, "actor", a.Actor, "error", err, "request_id", requestID(r.Context()))
			fail(w, err)
			return
		}
		s.log.Info("reconciliation item "+out.Status, "id", body.ID, "actor", a.Actor, "request_id", requestID(r.Context()))
		writeJSON(w, http.StatusOK, out)
	}
}

type redriveBody struct {
	Provider string `json:"provider"`
	Type     string `json:"type"`
	Status   string `json:"status"`
}

// redriveJSON answers POST /v1/inbox/redrive.
type redriveJSON struct {
	ingest.RedriveCounts
	Message string `json:"message,omitempty"`
}

// POST /v1/inbox/redrive (admin): as `onceledger redrive`.
func (s *server) inboxRedrive(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Redrive == nil {
		fail(w, errQueryNotConfigured)
		return
	}
	var body redriveBody
	if err := decodeActionBody(w, r, &body); err != nil {
		fail(w, err)
		return
	}
	p, _ := Principal(r.Context())
	c, err := s.cfg.Redrive.Redrive(r.Context(), ingest.RedriveFilter{Provider: body.Provider, Type: body.Type, Status: body.Status}, p.Actor)
	if err != nil {
		fail(w, err)
		return
	}
	s.log.Info("redrive", "actor", p.Actor, "provider", body.Provider, "type", body.Type, "counts", c, "request_id", requestID(r.Context()))
	writeJSON(w, http.StatusOK, redriveJSON{RedriveCounts: c, Message: RedriveMessage(c)})
}

// RedriveMessage says in one line what a redrive did, naming the rows that
// could not be re-driven.
func RedriveMessage(c ingest.RedriveCounts) string {
	msg := fmt.Sprintf("%d selected: %d recorded, %d still ignored", c.Selected, c.Recorded, c.Ignored)
	if c.Skipped > 0 {
		msg += fmt.Sprintf(", %d moved on meanwhile", c.Skipped)
	}
	if c.Erased > 0 {
		msg += fmt.Sprintf(", %d not re-drivable (raw body erased after the retention period)", c.Erased)
	}
	if c.Failed > 0 {
		msg += fmt.Sprintf(", %d failed (see the server log)", c.Failed)
	}
	return msg
}
