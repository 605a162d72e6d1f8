package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/onceledger/onceledger/adapters/ingest"
)

// RawEraser erases stored raw webhook bodies and records who did
// (postgres.Eraser).
type RawEraser interface {
	Erase(ctx context.Context, e ingest.Erasure) (ingest.Erased, error)
}

// eraseRequest is the body of POST /v1/inbox/erase: a delivery (provider
// and dedup_key) or a payment ("provider/payment_id").
type eraseRequest struct {
	Provider string `json:"provider"`
	DedupKey string `json:"dedup_key"`
	Payment  string `json:"payment"`
}

// eraseRaw is POST /v1/inbox/erase (admin), as `onceledger erase`: the
// actor recorded is the admin token's name.
func (s *server) eraseRaw(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Eraser == nil {
		s.queryError(w, r, errQueryNotConfigured)
		return
	}
	var req eraseRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.queryError(w, r, fmt.Errorf("%w: body: want {\"provider\":…,\"dedup_key\":…} or {\"payment\":\"provider/payment_id\"}: %v", errBadParameter, err))
		return
	}
	p, _ := Principal(r.Context())
	e := ingest.Erasure{Provider: req.Provider, DedupKey: req.DedupKey, Actor: p.Actor, Reason: ingest.ErasureRequest}
	if req.Payment != "" {
		if req.Provider != "" || req.DedupKey != "" {
			s.queryError(w, r, fmt.Errorf("%w: payment excludes provider and dedup_key", ingest.ErrBadErasure))
			return
		}
		prov, id, err := ingest.ParsePayment(req.Payment)
		if err != nil {
			s.queryError(w, r, err)
			return
		}
		e.Provider, e.PaymentID = prov, id
	}
	if e.Actor == "" {
		e.Actor = "admin"
	}
	n, err := s.cfg.Eraser.Erase(r.Context(), e)
	if err != nil {
		s.queryError(w, r, err)
		return
	}
	s.log.Info("raw bodies erased", "actor", e.Actor, "selection", e.Selector(),
		"inbox_rows", n.InboxRows, "conflict_rows", n.ConflictRows, "request_id", requestID(r.Context()))
	writeJSON(w, http.StatusOK, n)
}
