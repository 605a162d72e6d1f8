package console

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// Push subscriptions (docs/events.md): the list with each one's state,
// cursor and last error, one subscription's delivery attempts, and the
// admin actions re-enable and replay. /v1/subscriptions is admin only, so
// these pages are too: a subscription's URL may carry the receiver's own
// credentials.

// Subscription is one push subscription as GET /v1/subscriptions lists it.
type Subscription struct {
	ID          string
	URL         string
	Description string
	Types       []string // none: every type but settlement.line
	Providers   []string // none: every provider
	State       string   // active, failing, disabled
	// Cursor is where the subscription is in the feed, as GET /v1/events's
	// opaque cursor.
	Cursor      string
	Pending     int64 // events queued and not yet acknowledged
	LastError   string
	LastErrorAt time.Time // zero: none
	DisabledAt  time.Time // zero unless disabled
	Replaying   bool      // a replay is under way
	CreatedAt   time.Time
}

// DeliveryAttempt is one attempt, as GET /v1/subscriptions/{id}/deliveries
// lists it.
type DeliveryAttempt struct {
	EventID   string
	EventType string
	Attempt   int
	Replay    bool
	At        time.Time
	Status    int // HTTP status; 0: no answer came
	Latency   time.Duration
	Error     string
	Succeeded bool
}

// ReplayFrom is where a replay starts: after Cursor (exclusive, as
// GET /v1/events's after), or from Time.
type ReplayFrom struct {
	Cursor string
	Time   time.Time
}

// Subscriptions reads and acts on push subscriptions through the service
// the /v1/subscriptions endpoints call. Enable and Replay are recorded with
// the actor and the note.
type Subscriptions interface {
	ListSubscriptions(ctx context.Context) ([]Subscription, error)
	GetSubscription(ctx context.Context, id string) (Subscription, error)
	// SubscriptionDeliveries is the newest attempts first, at most limit;
	// status is "", "succeeded", "failed" or an HTTP status.
	SubscriptionDeliveries(ctx context.Context, id, status string, limit int) ([]DeliveryAttempt, error)
	EnableSubscription(ctx context.Context, id, actor, note string) error
	ReplaySubscription(ctx context.Context, id string, from ReplayFrom, actor, note string) error
}

type subscriptionsData struct {
	Subscriptions []Subscription
	Return        string
}

type subscriptionData struct {
	Sub      Subscription
	Attempts []DeliveryAttempt
	Status   string
	Statuses []string
	Limit    int
	Return   string
}

// adminOnly serves h to admins; a reader gets 403 naming why.
func (c *consoleServer) adminOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if v := viewerOf(r); !v.CanAct() {
			c.errorPage(w, r, nil, http.StatusForbidden, "Subscriptions are shown to admin tokens only (as GET /v1/subscriptions): your token ("+v.Actor+") may read the ledger but not these.")
			return
		}
		if c.cfg.Subscriptions == nil {
			c.errorPage(w, r, fmt.Errorf("push subscriptions are %w", errNotConfigured), 0, "")
			return
		}
		h(w, r)
	}
}

func (c *consoleServer) subscriptions(w http.ResponseWriter, r *http.Request) {
	subs, err := c.cfg.Subscriptions.ListSubscriptions(r.Context())
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	c.render(w, r, http.StatusOK, "subscriptions", "Subscriptions", subscriptionsData{Subscriptions: subs, Return: r.URL.RequestURI()})
}

// attemptStatuses are the deliveries filter's choices ("" = all).
var attemptStatuses = []string{"", "failed", "succeeded"}

func (c *consoleServer) subscription(w http.ResponseWriter, r *http.Request) {
	p := paramsOf(r)
	status := p.OneOf("status", attemptStatuses[1:]...)
	if err := p.Err(); err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	id := r.PathValue("id")
	sub, err := c.cfg.Subscriptions.GetSubscription(r.Context(), id)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	limit := c.cfg.PageSize
	attempts, err := c.cfg.Subscriptions.SubscriptionDeliveries(r.Context(), id, status, limit)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	title := sub.Description
	if title == "" {
		title = sub.URL
	}
	c.render(w, r, http.StatusOK, "subscription", "Subscription "+title, subscriptionData{
		Sub: sub, Attempts: attempts, Status: status, Statuses: attemptStatuses, Limit: limit, Return: r.URL.RequestURI(),
	})
}

// subscriptionForm reads the id and note every subscription action
// carries; it answers the error itself and reports whether to go on.
func (c *consoleServer) subscriptionForm(w http.ResponseWriter, r *http.Request) (id, note string, ok bool) {
	if c.cfg.Subscriptions == nil {
		c.errorPage(w, r, fmt.Errorf("push subscriptions are %w", errNotConfigured), 0, "")
		return "", "", false
	}
	id, note = r.PostForm.Get("id"), strings.TrimSpace(r.PostForm.Get("note"))
	switch {
	case id == "":
		c.errorPage(w, r, nil, http.StatusBadRequest, "The form names no subscription.")
		return "", "", false
	case note == "":
		c.errorPage(w, r, nil, http.StatusBadRequest, "A note is required: say why.")
		return "", "", false
	case utf8.RuneCountInString(note) > maxNote || !utf8.ValidString(note):
		c.errorPage(w, r, nil, http.StatusBadRequest, fmt.Sprintf("The note must be UTF-8 text of at most %d characters.", maxNote))
		return "", "", false
	}
	return id, note, true
}

func (c *consoleServer) enableSubscription(w http.ResponseWriter, r *http.Request) {
	id, note, ok := c.subscriptionForm(w, r)
	if !ok {
		return
	}
	actor := viewerOf(r).Actor
	if err := c.cfg.Subscriptions.EnableSubscription(r.Context(), id, actor, note); err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	c.cfg.Logger.Info("console: subscription enabled", "actor", actor, "subscription", id)
	http.Redirect(w, r, subscriptionBack(r.PostForm.Get("return"), "enabled"), http.StatusSeeOther)
}

func (c *consoleServer) replaySubscription(w http.ResponseWriter, r *http.Request) {
	id, note, ok := c.subscriptionForm(w, r)
	if !ok {
		return
	}
	var from ReplayFrom
	cursor, at := strings.TrimSpace(r.PostForm.Get("from")), strings.TrimSpace(r.PostForm.Get("from_time"))
	switch {
	case cursor != "" && at != "":
		c.errorPage(w, r, nil, http.StatusBadRequest, "Give a cursor or a time to replay from, not both.")
		return
	case at != "":
		t, err := time.Parse(time.RFC3339, at)
		if err != nil {
			c.errorPage(w, r, nil, http.StatusBadRequest, "The time to replay from must be RFC 3339, such as 2026-11-29T10:00:00Z.")
			return
		}
		from.Time = t
	case cursor != "":
		from.Cursor = cursor
	default:
		c.errorPage(w, r, nil, http.StatusBadRequest, "Give a cursor or a time to replay from.")
		return
	}
	actor := viewerOf(r).Actor
	if err := c.cfg.Subscriptions.ReplaySubscription(r.Context(), id, from, actor, note); err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	c.cfg.Logger.Info("console: subscription replay", "actor", actor, "subscription", id, "from", cursor, "from_time", at)
	http.Redirect(w, r, subscriptionBack(r.PostForm.Get("return"), "replaying"), http.StatusSeeOther)
}

// subscriptionBack is the redirect after a subscription action: the
// subscriptions page the form came from (never elsewhere), with done=….
func subscriptionBack(back, done string) string {
	if !strings.HasPrefix(back, Prefix+"/subscriptions") || strings.ContainsAny(back, "\\\r\n") {
		back = Prefix + "/subscriptions"
	}
	path, query, _ := strings.Cut(back, "?")
	var kept []string
	for _, kv := range strings.Split(query, "&") {
		if kv != "" && !strings.HasPrefix(kv, "done=") {
			kept = append(kept, kv)
		}
	}
	return path + "?" + strings.Join(append(kept, "done="+done), "&")
}

// subscriptionForms is what the enable and replay forms of one
// subscription need.
type subscriptionForms struct {
	Sub    Subscription
	CSRF   string
	Return string
}

func newSubscriptionForms(s Subscription, csrf, ret string) subscriptionForms {
	return subscriptionForms{Sub: s, CSRF: csrf, Return: ret}
}
