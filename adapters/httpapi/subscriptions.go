package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/onceledger/onceledger/adapters/outbox"
	"github.com/onceledger/onceledger/projections/outbound"
)

// Push subscriptions on /v1 (admin tokens; docs/events.md, "Push
// subscriptions"): create, list, change, remove, enable, rotate the
// secret, replay, and the attempts. Each action is recorded with the
// token's name as the actor and the body's optional note.

// SubscriptionAdmin is the operators' side of push subscriptions
// (outbox.Service).
type SubscriptionAdmin interface {
	Create(ctx context.Context, n outbox.NewSubscription, actor, note string) (outbox.Created, error)
	List(ctx context.Context) ([]outbox.Subscription, error)
	Get(ctx context.Context, id uuid.UUID) (outbox.Subscription, error)
	Update(ctx context.Context, id uuid.UUID, p outbox.Patch, actor, note string) (outbox.Subscription, error)
	Delete(ctx context.Context, id uuid.UUID, actor, note string) error
	Enable(ctx context.Context, id uuid.UUID, actor, note string) (outbox.Subscription, error)
	RotateSecret(ctx context.Context, id uuid.UUID, actor, note string) (outbox.Rotated, error)
	Replay(ctx context.Context, id uuid.UUID, r outbox.ReplayFrom, actor, note string) (outbox.Subscription, error)
	Deliveries(ctx context.Context, id uuid.UUID, f outbox.AttemptFilter) ([]outbox.Attempt, error)
}

var _ SubscriptionAdmin = (*outbox.Service)(nil)

func (s *server) registerSubscriptions(v1 *mux.Router) {
	v1.Handle("/subscriptions", acting(s.createSubscription)).Methods(http.MethodPost)
	v1.Handle("/subscriptions", acting(s.listSubscriptions)).Methods(http.MethodGet)
	v1.Handle("/subscriptions/{id}", acting(s.getSubscription)).Methods(http.MethodGet)
	v1.Handle("/subscriptions/{id}", acting(s.patchSubscription)).Methods(http.MethodPatch)
	v1.Handle("/subscriptions/{id}", acting(s.deleteSubscription)).Methods(http.MethodDelete)
	v1.Handle("/subscriptions/{id}/enable", acting(s.enableSubscription)).Methods(http.MethodPost)
	v1.Handle("/subscriptions/{id}/rotate-secret", acting(s.rotateSubscriptionSecret)).Methods(http.MethodPost)
	v1.Handle("/subscriptions/{id}/replay", acting(s.replaySubscription)).Methods(http.MethodPost)
	v1.Handle("/subscriptions/{id}/deliveries", acting(s.subscriptionDeliveries)).Methods(http.MethodGet)
}

// SubscriptionJSON is a subscription as /v1 shows it.
type SubscriptionJSON struct {
	ID          string   `json:"id"`
	URL         string   `json:"url"`
	Types       []string `json:"types"`
	Providers   []string `json:"providers"`
	Description string   `json:"description"`
	State       string   `json:"state"`
	// Cursor is where the subscription is in the feed (GET /v1/events's
	// after): every matching event up to it is queued or delivered.
	Cursor      string     `json:"cursor"`
	Pending     int64      `json:"pending"`
	LastError   string     `json:"last_error"`
	LastErrorAt *time.Time `json:"last_error_at"`
	DisabledAt  *time.Time `json:"disabled_at"`
	// OldSecretExpiresAt: during a rotation, until when the old secret
	// signs too.
	OldSecretExpiresAt *time.Time  `json:"old_secret_expires_at"`
	Replay             *ReplayJSON `json:"replay"`
	CreatedBy          string      `json:"created_by"`
	CreatedAt          time.Time   `json:"created_at"`
	UpdatedAt          time.Time   `json:"updated_at"`
}

// ReplayJSON is a replay under way.
type ReplayJSON struct {
	At       string     `json:"at"`    // the cursor the replay has queued up to
	Until    string     `json:"until"` // where it ends (the subscription's cursor when it was asked)
	FromTime *time.Time `json:"from_time,omitempty"`
}

// NewSubscriptionJSON is sub's JSON shape.
func NewSubscriptionJSON(sub outbox.Subscription) SubscriptionJSON {
	out := SubscriptionJSON{
		ID: sub.ID.String(), URL: sub.URL, Types: sub.Types, Providers: sub.Providers, Description: sub.Description,
		State: sub.State, Cursor: outbound.Cursor(sub.Position), Pending: sub.Pending, LastError: sub.LastError,
		LastErrorAt: timePtr(sub.LastErrorAt), DisabledAt: timePtr(sub.DisabledAt),
		OldSecretExpiresAt: timePtr(sub.OldSecretExpires), CreatedBy: sub.CreatedBy, CreatedAt: sub.CreatedAt.UTC(),
		UpdatedAt: sub.UpdatedAt.UTC(),
	}
	if out.Types == nil {
		out.Types = []string{}
	}
	if out.Providers == nil {
		out.Providers = []string{}
	}
	if r := sub.Replay; r != nil {
		out.Replay = &ReplayJSON{At: outbound.Cursor(r.From), Until: outbound.Cursor(r.Until), FromTime: timePtr(r.FromTime)}
	}
	return out
}

// admin is the configured service, or 503.
func (s *server) admin(w http.ResponseWriter) (SubscriptionAdmin, bool) {
	if s.cfg.Subscriptions == nil {
		fail(w, errQueryNotConfigured)
		return nil, false
	}
	return s.cfg.Subscriptions, true
}

// subscriptionID is the {id} of the path; an id that is not a UUID names
// no subscription.
func subscriptionID(r *http.Request) (uuid.UUID, error) {
	id, err := uuid.Parse(mux.Vars(r)["id"])
	if err != nil {
		return uuid.Nil, fmt.Errorf("%w: %q", outbox.ErrNotFound, mux.Vars(r)["id"])
	}
	return id, nil
}

func actor(r *http.Request) string {
	p, _ := Principal(r.Context())
	return p.Actor
}

type createSubscriptionBody struct {
	URL         string   `json:"url"`
	Types       []string `json:"types"`
	Providers   []string `json:"providers"`
	Description string   `json:"description"`
	From        string   `json:"from"`
	Note        string   `json:"note"`
}

// CreatedJSON answers POST /v1/subscriptions: the secret, shown once.
type CreatedJSON struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
}

// POST /v1/subscriptions (admin): the id and the secret.
func (s *server) createSubscription(w http.ResponseWriter, r *http.Request) {
	svc, ok := s.admin(w)
	if !ok {
		return
	}
	var body createSubscriptionBody
	if err := decodeActionBody(w, r, &body); err != nil {
		fail(w, err)
		return
	}
	c, err := svc.Create(r.Context(), outbox.NewSubscription{URL: body.URL, Types: body.Types, Providers: body.Providers,
		Description: body.Description, From: body.From}, actor(r), strings.TrimSpace(body.Note))
	if err != nil {
		fail(w, err)
		return
	}
	s.log.Info("subscription created", "id", c.Subscription.ID, "host", outbox.Host(c.Subscription.URL), "actor", actor(r), "request_id", requestID(r.Context()))
	writeJSON(w, http.StatusOK, CreatedJSON{ID: c.Subscription.ID.String(), Secret: c.Secret})
}

// SubscriptionsJSON answers GET /v1/subscriptions.
type SubscriptionsJSON struct {
	Subscriptions []SubscriptionJSON `json:"subscriptions"`
}

func (s *server) listSubscriptions(w http.ResponseWriter, r *http.Request) {
	svc, ok := s.admin(w)
	if !ok {
		return
	}
	subs, err := svc.List(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	out := SubscriptionsJSON{Subscriptions: make([]SubscriptionJSON, len(subs))}
	for i, sub := range subs {
		out.Subscriptions[i] = NewSubscriptionJSON(sub)
	}
	writeJSON(w, http.StatusOK, out)
}

// one runs fn on the path's subscription and answers its result as
// SubscriptionJSON with status.
func (s *server) one(w http.ResponseWriter, r *http.Request, status int,
	fn func(svc SubscriptionAdmin, id uuid.UUID) (outbox.Subscription, error)) {
	svc, ok := s.admin(w)
	if !ok {
		return
	}
	id, err := subscriptionID(r)
	if err != nil {
		fail(w, err)
		return
	}
	sub, err := fn(svc, id)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, status, NewSubscriptionJSON(sub))
}

func (s *server) getSubscription(w http.ResponseWriter, r *http.Request) {
	s.one(w, r, http.StatusOK, func(svc SubscriptionAdmin, id uuid.UUID) (outbox.Subscription, error) {
		return svc.Get(r.Context(), id)
	})
}

type patchSubscriptionBody struct {
	URL         *string   `json:"url"`
	Types       *[]string `json:"types"`
	Providers   *[]string `json:"providers"`
	Description *string   `json:"description"`
	Note        string    `json:"note"`
}

// PATCH /v1/subscriptions/{id} (admin): the fields given change.
func (s *server) patchSubscription(w http.ResponseWriter, r *http.Request) {
	var body patchSubscriptionBody
	if err := decodeActionBody(w, r, &body); err != nil {
		fail(w, err)
		return
	}
	s.one(w, r, http.StatusOK, func(svc SubscriptionAdmin, id uuid.UUID) (outbox.Subscription, error) {
		p := outbox.Patch{URL: body.URL, Types: body.Types, Providers: body.Providers, Description: body.Description}
		sub, err := svc.Update(r.Context(), id, p, actor(r), strings.TrimSpace(body.Note))
		if err == nil {
			s.log.Info("subscription updated", "id", id, "actor", actor(r), "request_id", requestID(r.Context()))
		}
		return sub, err
	})
}

type noteBody struct {
	Note string `json:"note"`
}

// DeletedJSON answers DELETE /v1/subscriptions/{id}.
type DeletedJSON struct {
	ID     string `json:"id"`
	Status string `json:"status"` // "deleted"
}

func (s *server) deleteSubscription(w http.ResponseWriter, r *http.Request) {
	svc, ok := s.admin(w)
	if !ok {
		return
	}
	var body noteBody
	if err := decodeActionBody(w, r, &body); err != nil {
		fail(w, err)
		return
	}
	id, err := subscriptionID(r)
	if err == nil {
		err = svc.Delete(r.Context(), id, actor(r), strings.TrimSpace(body.Note))
	}
	if err != nil {
		fail(w, err)
		return
	}
	s.log.Info("subscription deleted", "id", id, "actor", actor(r), "request_id", requestID(r.Context()))
	writeJSON(w, http.StatusOK, DeletedJSON{ID: id.String(), Status: "deleted"})
}

// POST /v1/subscriptions/{id}/enable (admin).
func (s *server) enableSubscription(w http.ResponseWriter, r *http.Request) {
	var body noteBody
	if err := decodeActionBody(w, r, &body); err != nil {
		fail(w, err)
		return
	}
	s.one(w, r, http.StatusOK, func(svc SubscriptionAdmin, id uuid.UUID) (outbox.Subscription, error) {
		sub, err := svc.Enable(r.Context(), id, actor(r), strings.TrimSpace(body.Note))
		if err == nil {
			s.log.Info("subscription enabled", "id", id, "actor", actor(r), "request_id", requestID(r.Context()))
		}
		return sub, err
	})
}

// RotatedJSON answers POST /v1/subscriptions/{id}/rotate-secret: the new
// secret, shown once.
type RotatedJSON struct {
	ID                 string    `json:"id"`
	Secret             string    `json:"secret"`
	OldSecretExpiresAt time.Time `json:"old_secret_expires_at"`
}

func (s *server) rotateSubscriptionSecret(w http.ResponseWriter, r *http.Request) {
	svc, ok := s.admin(w)
	if !ok {
		return
	}
	var body noteBody
	if err := decodeActionBody(w, r, &body); err != nil {
		fail(w, err)
		return
	}
	id, err := subscriptionID(r)
	var rot outbox.Rotated
	if err == nil {
		rot, err = svc.RotateSecret(r.Context(), id, actor(r), strings.TrimSpace(body.Note))
	}
	if err != nil {
		fail(w, err)
		return
	}
	s.log.Info("subscription secret rotated", "id", id, "actor", actor(r), "request_id", requestID(r.Context()))
	writeJSON(w, http.StatusOK, RotatedJSON{ID: id.String(), Secret: rot.Secret, OldSecretExpiresAt: rot.OldExpires.UTC()})
}

type replayBody struct {
	From     string `json:"from"`
	FromTime string `json:"from_time"`
	Note     string `json:"note"`
}

// POST /v1/subscriptions/{id}/replay (admin): the replay is stored
// and runs in the background.
func (s *server) replaySubscription(w http.ResponseWriter, r *http.Request) {
	var body replayBody
	if err := decodeActionBody(w, r, &body); err != nil {
		fail(w, err)
		return
	}
	from := outbox.ReplayFrom{After: body.From}
	if body.FromTime != "" {
		t, err := time.Parse(time.RFC3339Nano, body.FromTime)
		if err != nil {
			fail(w, fmt.Errorf("%w: from_time: RFC 3339 expected", errBadParameter))
			return
		}
		from.FromTime = t
	}
	s.one(w, r, http.StatusOK, func(svc SubscriptionAdmin, id uuid.UUID) (outbox.Subscription, error) {
		sub, err := svc.Replay(r.Context(), id, from, actor(r), strings.TrimSpace(body.Note))
		if err == nil {
			s.log.Info("subscription replay", "id", id, "actor", actor(r), "from", body.From, "from_time", body.FromTime, "request_id", requestID(r.Context()))
		}
		return sub, err
	})
}

// AttemptJSON is one attempt.
type AttemptJSON struct {
	ID        int64     `json:"id"`
	EventID   string    `json:"event_id"`
	EventType string    `json:"event_type"`
	Attempt   int       `json:"attempt"`
	Replay    bool      `json:"replay"`
	Time      time.Time `json:"time"`
	Status    *int      `json:"status"` // null: no HTTP answer (refused, time-out)
	LatencyMS int64     `json:"latency_ms"`
	Error     string    `json:"error"`
	Succeeded bool      `json:"succeeded"`
}

// DeliveriesJSON answers GET /v1/subscriptions/{id}/deliveries.
type DeliveriesJSON struct {
	Deliveries []AttemptJSON `json:"deliveries"`
}

// GET /v1/subscriptions/{id}/deliveries?status=succeeded|failed|NNN&limit=N
// (admin): attempts, newest first.
func (s *server) subscriptionDeliveries(w http.ResponseWriter, r *http.Request) {
	svc, ok := s.admin(w)
	if !ok {
		return
	}
	f := outbox.AttemptFilter{Status: r.URL.Query().Get("status")}
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			fail(w, fmt.Errorf("%w: limit: a positive integer", errBadParameter))
			return
		}
		f.Limit = n
	}
	id, err := subscriptionID(r)
	var as []outbox.Attempt
	if err == nil {
		as, err = svc.Deliveries(r.Context(), id, f)
	}
	if err != nil {
		fail(w, err)
		return
	}
	out := DeliveriesJSON{Deliveries: make([]AttemptJSON, len(as))}
	for i, a := range as {
		out.Deliveries[i] = AttemptJSON{ID: a.ID, EventID: a.EventID.String(), EventType: a.EventType, Attempt: a.Attempt,
			Replay: a.Replay, Time: a.At.UTC(), LatencyMS: a.Latency.Milliseconds(), Error: a.Error, Succeeded: a.Succeeded}
		if a.Status != 0 {
			st := a.Status
			out.Deliveries[i].Status = &st
		}
	}
	writeJSON(w, http.StatusOK, out)
}
