package outbox

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/projections/outbound"
)

// Store keeps the subscriptions (adapters/postgres.Subscriptions). Every
// change is recorded with its Action in the same transaction; a missing
// id is ErrNotFound.
type Store interface {
	CreateSubscription(ctx context.Context, s NewRow, a Action) error
	ListSubscriptions(ctx context.Context) ([]Subscription, error)
	GetSubscription(ctx context.Context, id uuid.UUID) (Subscription, error)
	UpdateSubscription(ctx context.Context, id uuid.UUID, p Patch, a Action) error
	DeleteSubscription(ctx context.Context, id uuid.UUID, a Action) error
	// EnableSubscription makes a disabled (or failing) subscription active
	// and every pending stream due now, with its attempts reset.
	EnableSubscription(ctx context.Context, id uuid.UUID, now time.Time, a Action) error
	// RotateSecret makes sealed the secret and the current one the old
	// one, signing too until oldExpires.
	RotateSecret(ctx context.Context, id uuid.UUID, sealed []byte, oldExpires time.Time, a Action) error
	StartReplay(ctx context.Context, id uuid.UUID, r Replay, a Action) error
	ListAttempts(ctx context.Context, id uuid.UUID, f AttemptFilter) ([]Attempt, error)
}

// NewRow is a subscription to create, its secret sealed.
type NewRow struct {
	Subscription
	Secret []byte
}

// Patch changes what is set.
type Patch struct {
	URL         *string
	Types       *[]string
	Providers   *[]string
	Description *string
}

// AttemptFilter selects attempts: Status "succeeded", "failed", an HTTP
// status ("503"), or "" for all; newest first, at most Limit.
type AttemptFilter struct {
	Status string
	Limit  int
}

// Head is the feed's last position (eventstore.Store's Head): a new
// subscription starts there.
type Head interface {
	Head(ctx context.Context) (eventstore.Position, error)
}

// Items closes the operators' item a disabled subscription opened
// (operations.Reconciliation), when it is re-enabled.
type Items interface {
	CloseSubscriptionDisabled(ctx context.Context, sub uuid.UUID, actor, note string) error
}

// RotationOverlap is how long an old secret keeps signing after a
// rotation.
const RotationOverlap = 24 * time.Hour

// Limits of a subscription's fields.
const (
	MaxDescription = 1000
	MaxNote        = 1000
)

// Service is the operators' side of push subscriptions: every action is
// recorded with the actor and note beside the change.
type Service struct {
	store        Store
	head         Head
	sealer       *Sealer // nil: ONCELEDGER_SECRETS_KEY not set
	providers    []string
	allowPrivate bool
	items        Items
	now          func() time.Time
	changed      func()
}

// ServiceOptions configure a Service.
type ServiceOptions struct {
	// Sealer encrypts the secrets (ParseKey of ONCELEDGER_SECRETS_KEY);
	// nil: creating or rotating is ErrNoSecretsKey.
	Sealer *Sealer
	// Providers are the provider names a providers filter may name; none:
	// any name.
	Providers []string
	// AllowPrivate is ONCELEDGER_OUTBOX_ALLOW_PRIVATE.
	AllowPrivate bool
	// Items, when set, resolves a disabled subscription's item on Enable.
	Items Items
	Now   func() time.Time
	// Changed, when set, is told after each change the sender acts on
	// (create, update, delete, enable, rotation, replay): serve passes its
	// sender's Wake, so that the change takes effect at once rather than at
	// the sender's next lease renewal.
	Changed func()
}

// NewService returns the service over store.
func NewService(store Store, head Head, o ServiceOptions) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Changed == nil {
		o.Changed = func() {}
	}
	return &Service{store: store, head: head, sealer: o.Sealer, providers: o.Providers, allowPrivate: o.AllowPrivate, items: o.Items,
		now: o.Now, changed: o.Changed}
}

// NewSubscription is a create request.
type NewSubscription struct {
	URL         string
	Types       []string
	Providers   []string
	Description string
	// From, when set, is the cursor after which it starts (exclusive, as
	// GET /v1/events's after); "" starts at the feed's head.
	From string
}

// Created is a new subscription and its secret, shown this once.
type Created struct {
	Subscription Subscription
	Secret       string
}

// Create makes a subscription; its secret is returned once.
func (s *Service) Create(ctx context.Context, n NewSubscription, actor, note string) (Created, error) {
	if s.sealer == nil {
		return Created{}, ErrNoSecretsKey
	}
	sub := Subscription{ID: uuid.New(), URL: strings.TrimSpace(n.URL), Description: strings.TrimSpace(n.Description),
		State: StateActive, CreatedBy: actor}
	var err error
	if err = s.check(&sub, n.Types, n.Providers, actor, note); err != nil {
		return Created{}, err
	}
	if n.From != "" {
		if sub.Position, err = s.parseFrom(ctx, n.From); err != nil {
			return Created{}, err
		}
	} else if sub.Position, err = s.head.Head(ctx); err != nil {
		return Created{}, err
	}
	if err := s.verifyKey(ctx); err != nil {
		return Created{}, err
	}
	secret, err := NewSecret()
	if err != nil {
		return Created{}, err
	}
	sealed, err := s.sealer.Seal(sub.ID.String(), secret)
	if err != nil {
		return Created{}, err
	}
	now := s.now()
	sub.CreatedAt, sub.UpdatedAt = now, now
	a := Action{Name: "created", Actor: actor, Note: note, At: now, Details: map[string]any{
		"url": sub.URL, "types": sub.Types, "providers": sub.Providers, "cursor": outbound.Cursor(sub.Position)}}
	if err := s.store.CreateSubscription(ctx, NewRow{Subscription: sub, Secret: sealed}, a); err != nil {
		return Created{}, err
	}
	s.changed()
	return Created{Subscription: sub, Secret: secret}, nil
}

// check validates and normalizes a subscription's fields.
func (s *Service) check(sub *Subscription, types, providers []string, actor, note string) error {
	if strings.TrimSpace(actor) == "" {
		return ErrActorRequired
	}
	if len([]rune(note)) > MaxNote {
		return fmt.Errorf("%w: note longer than %d characters", ErrInvalid, MaxNote)
	}
	if err := CheckURL(sub.URL, s.allowPrivate); err != nil {
		return err
	}
	if len([]rune(sub.Description)) > MaxDescription {
		return fmt.Errorf("%w: description longer than %d characters", ErrInvalid, MaxDescription)
	}
	var err error
	if sub.Types, err = s.checkTypes(types); err != nil {
		return err
	}
	sub.Providers, err = s.checkProviders(providers)
	return err
}

func (s *Service) checkTypes(types []string) ([]string, error) {
	known := outbound.Types()
	out := []string{}
	for _, t := range types {
		t = strings.TrimSpace(t)
		if _, ok := slices.BinarySearch(known, t); !ok {
			return nil, fmt.Errorf("%w: unknown event type %q (GET /v1/events/types lists them)", ErrInvalid, t)
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (s *Service) checkProviders(providers []string) ([]string, error) {
	out := []string{}
	for _, p := range providers {
		p = strings.TrimSpace(p)
		if p == "" || (len(s.providers) > 0 && !slices.Contains(s.providers, p)) {
			return nil, fmt.Errorf("%w: unknown provider %q", ErrInvalid, p)
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}

// List returns every subscription, oldest first.
func (s *Service) List(ctx context.Context) ([]Subscription, error) {
	return s.store.ListSubscriptions(ctx)
}

// Get returns one subscription.
func (s *Service) Get(ctx context.Context, id uuid.UUID) (Subscription, error) {
	return s.store.GetSubscription(ctx, id)
}

// Update changes url, types, providers or description.
func (s *Service) Update(ctx context.Context, id uuid.UUID, p Patch, actor, note string) (Subscription, error) {
	cur, err := s.store.GetSubscription(ctx, id)
	if err != nil {
		return Subscription{}, err
	}
	next := cur
	types, providers := cur.Types, cur.Providers
	if p.URL != nil {
		next.URL = strings.TrimSpace(*p.URL)
	}
	if p.Description != nil {
		next.Description = strings.TrimSpace(*p.Description)
	}
	if p.Types != nil {
		types = *p.Types
	}
	if p.Providers != nil {
		providers = *p.Providers
	}
	if err := s.check(&next, types, providers, actor, note); err != nil {
		return Subscription{}, err
	}
	clean := Patch{URL: &next.URL, Types: &next.Types, Providers: &next.Providers, Description: &next.Description}
	a := Action{Name: "updated", Actor: actor, Note: note, At: s.now(), Details: map[string]any{
		"url": next.URL, "types": next.Types, "providers": next.Providers, "description": next.Description}}
	if err := s.store.UpdateSubscription(ctx, id, clean, a); err != nil {
		return Subscription{}, err
	}
	s.changed()
	return s.store.GetSubscription(ctx, id)
}

// Delete removes a subscription, its queue and its attempts; the actions'
// trail stays.
func (s *Service) Delete(ctx context.Context, id uuid.UUID, actor, note string) error {
	if strings.TrimSpace(actor) == "" {
		return ErrActorRequired
	}
	if err := s.store.DeleteSubscription(ctx, id, Action{Name: "deleted", Actor: actor, Note: note, At: s.now()}); err != nil {
		return err
	}
	s.changed()
	return nil
}

// Enable re-enables a subscription: it resumes where it stopped, the
// event it gave up on first.
func (s *Service) Enable(ctx context.Context, id uuid.UUID, actor, note string) (Subscription, error) {
	if strings.TrimSpace(actor) == "" {
		return Subscription{}, ErrActorRequired
	}
	now := s.now()
	if err := s.store.EnableSubscription(ctx, id, now, Action{Name: "enabled", Actor: actor, Note: note, At: now}); err != nil {
		return Subscription{}, err
	}
	s.changed()
	if s.items != nil {
		// Enabling is idempotent: a failure here is retried by enabling
		// again.
		if err := s.items.CloseSubscriptionDisabled(ctx, id, actor, note); err != nil {
			return Subscription{}, fmt.Errorf("subscription enabled; its item not resolved: %w", err)
		}
	}
	return s.store.GetSubscription(ctx, id)
}

// Rotated is a rotation's answer: the new secret, shown this once, and
// until when the old one signs too.
type Rotated struct {
	ID         uuid.UUID
	Secret     string
	OldExpires time.Time
}

// RotateSecret gives the subscription a new secret; the current one keeps
// signing (a second signature) for RotationOverlap.
func (s *Service) RotateSecret(ctx context.Context, id uuid.UUID, actor, note string) (Rotated, error) {
	if s.sealer == nil {
		return Rotated{}, ErrNoSecretsKey
	}
	if strings.TrimSpace(actor) == "" {
		return Rotated{}, ErrActorRequired
	}
	if err := s.verifyKey(ctx); err != nil {
		return Rotated{}, err
	}
	secret, err := NewSecret()
	if err != nil {
		return Rotated{}, err
	}
	sealed, err := s.sealer.Seal(id.String(), secret)
	if err != nil {
		return Rotated{}, err
	}
	now := s.now()
	until := now.Add(RotationOverlap)
	a := Action{Name: "secret_rotated", Actor: actor, Note: note, At: now, Details: map[string]any{"old_expires_at": until}}
	if err := s.store.RotateSecret(ctx, id, sealed, until, a); err != nil {
		return Rotated{}, err
	}
	s.changed()
	return Rotated{ID: id, Secret: secret, OldExpires: until}, nil
}

// parseFrom reads a from cursor, refusing one beyond the feed's head
// (issue 33): well-formed, it would be accepted and the subscription would
// silently skip every event up to it once the feed got there.
func (s *Service) parseFrom(ctx context.Context, from string) (eventstore.Position, error) {
	p, err := outbound.ParseCursor(from)
	if err != nil {
		return eventstore.Position{}, fmt.Errorf("%w: from: %w", ErrInvalid, err)
	}
	head, err := s.head.Head(ctx)
	if err != nil {
		return eventstore.Position{}, err
	}
	if head.Less(p) {
		return eventstore.Position{}, fmt.Errorf("%w: from: the cursor %s is beyond the feed's head (%s): no event is there yet",
			ErrInvalid, from, outbound.Cursor(head))
	}
	return p, nil
}

// ReplayFrom is where a replay starts: after a cursor (exclusive), or at
// the first event recorded at or after a time.
type ReplayFrom struct {
	After    string
	FromTime time.Time
}

// Replay sends the events from r up to the subscription's current
// position again, with the same ids, on the replay lane (throttled beside
// live deliveries). A replay replaces one under way.
func (s *Service) Replay(ctx context.Context, id uuid.UUID, r ReplayFrom, actor, note string) (Subscription, error) {
	if strings.TrimSpace(actor) == "" {
		return Subscription{}, ErrActorRequired
	}
	sub, err := s.store.GetSubscription(ctx, id)
	if err != nil {
		return Subscription{}, err
	}
	rep := Replay{Until: sub.Position, FromTime: r.FromTime}
	switch {
	case r.After != "" && !r.FromTime.IsZero():
		return Subscription{}, fmt.Errorf("%w: give from or from_time, not both", ErrInvalid)
	case r.After != "":
		if rep.From, err = s.parseFrom(ctx, r.After); err != nil {
			return Subscription{}, err
		}
	case r.FromTime.IsZero():
		return Subscription{}, fmt.Errorf("%w: from (a cursor) or from_time (RFC 3339) is required", ErrInvalid)
	}
	details := map[string]any{"from": outbound.Cursor(rep.From), "until": outbound.Cursor(rep.Until)}
	if !rep.FromTime.IsZero() {
		details["from_time"] = rep.FromTime
	}
	a := Action{Name: "replay", Actor: actor, Note: note, At: s.now(), Details: details}
	if err := s.store.StartReplay(ctx, id, rep, a); err != nil {
		return Subscription{}, err
	}
	s.changed()
	return s.store.GetSubscription(ctx, id)
}

// Deliveries lists a subscription's attempts, newest first.
func (s *Service) Deliveries(ctx context.Context, id uuid.UUID, f AttemptFilter) ([]Attempt, error) {
	if _, err := s.store.GetSubscription(ctx, id); err != nil {
		return nil, err
	}
	switch {
	case f.Limit <= 0:
		f.Limit = 100
	case f.Limit > 1000:
		f.Limit = 1000
	}
	if f.Status != "" && f.Status != "succeeded" && f.Status != "failed" {
		if n := len(f.Status); n != 3 || strings.Trim(f.Status, "0123456789") != "" {
			return nil, fmt.Errorf("%w: status: succeeded, failed or an HTTP status", ErrInvalid)
		}
	}
	return s.store.ListAttempts(ctx, id, f)
}

// verifyKey checks the key against the stored check value before a secret
// is sealed with it (VerifyKey), when the store keeps one: a secret sealed
// with another instance's key would never open where it is sent from.
// The first secret stored writes the check value.
func (s *Service) verifyKey(ctx context.Context) error {
	if kc, ok := s.store.(KeyCheckStore); ok {
		return VerifyKey(ctx, s.sealer, kc)
	}
	return nil
}
