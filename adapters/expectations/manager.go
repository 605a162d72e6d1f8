// Package expectations runs the expected-payment process manager: it
// follows the global feed from its own checkpoint and the clock, and turns
// what it sees into the expectations' events (domain/expectation, through
// operations.Expectations): a capture whose provider reference names an
// expectation appends paid (late after overdue; amount_mismatch when the
// amount differs), a failed attempt appends failed, expires_at passing
// appends overdue with its payment_overdue item. It keeps the
// expected_payments rows (the fold of each expectation's stream, with the
// schedule of asking the provider) in the transaction that moves its
// checkpoint, so a restart resumes where it stopped and a replayed batch
// decides nothing twice (every append is a decision on the stream at its
// version). One instance runs it at a time, by a lease.
package expectations

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/adapters/command"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/expectation"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
)

// Feed is the part of the event store the manager reads.
type Feed interface {
	ReadAll(ctx context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error)
	ReadStream(ctx context.Context, stream string) ([]eventstore.RecordedEvent, error)
}

var _ Feed = eventstore.Store(nil)

// Commands are the expectation commands the manager gives
// (operations.Expectations).
type Commands interface {
	Capture(ctx context.Context, id uuid.UUID, c expectation.CaptureSeen) (bool, error)
	Failure(ctx context.Context, id uuid.UUID, f expectation.FailureSeen) (bool, error)
	Clock(ctx context.Context, id uuid.UUID, now time.Time) (bool, error)
}

// PaymentFact is a capture or a failed attempt the feed showed, under one
// id the merchant may have registered (Reference: the payment's own id or
// one of the merchant's references the delivery named).
type PaymentFact struct {
	Provider, Reference string
	PaymentStream       string
	CaptureID           string
	Amount              int64
	Currency            money.Currency
	Failed              bool
	Reason              string
	At                  time.Time
}

// Row is one expected_payments row: the fold of an expectation's stream,
// with the version folded (a row is written only over an older one) and
// when to ask the provider first (zero: never).
type Row struct {
	expectation.Expectation
	UpdatedAt time.Time
	QueryAt   time.Time
}

// Store is the manager's Postgres side (adapters/postgres/expectstore).
type Store interface {
	// Lease takes or renews the manager's lease for d and returns its
	// checkpoint; ok is false while another instance holds it.
	Lease(ctx context.Context, owner string, d time.Duration) (at eventstore.Position, ok bool, err error)
	// RecordPayments keeps facts (those on record already are skipped).
	RecordPayments(ctx context.Context, facts []PaymentFact) error
	// Registered returns those of ids that have a row.
	Registered(ctx context.Context, ids []uuid.UUID) ([]uuid.UUID, error)
	// PaymentsOf returns the recorded facts of (provider, reference),
	// captures first.
	PaymentsOf(ctx context.Context, provider, reference string) ([]PaymentFact, error)
	// Save writes rows (each only over an older version) and moves the
	// checkpoint to at, in one transaction, while owner holds the lease.
	Save(ctx context.Context, owner string, rows []Row, at eventstore.Position) error
	// DueOverdue returns expectations still expected whose expires_at is
	// at or before now (oldest first, at most limit).
	DueOverdue(ctx context.Context, now time.Time, limit int) ([]uuid.UUID, error)
	// PruneCaptures forgets the payment facts it has kept longer than
	// window (by the database's clock: when they were kept, not when the
	// provider says they happened: a backfill of old events is kept too).
	PruneCaptures(ctx context.Context, window time.Duration) error
}

// CaptureWindow is how long the manager remembers a capture for an
// expectation registered after it (the order service registers before or
// shortly after the payment; a bill comes the next day).
const CaptureWindow = 30 * 24 * time.Hour

// ErrLeaseLost: another instance took the lease; this one stops acting.
var ErrLeaseLost = errors.New("expectations: the lease was lost")

// Config tunes the manager.
type Config struct {
	Owner      string        // this instance's lease owner id
	Lease      time.Duration // default 30s
	Batch      int           // feed events per step; default 500
	Poll       time.Duration // idle wait between steps; default 1s
	QueryAfter time.Duration // ONCELEDGER_QUERY_AFTER: first query this long after registration; 0 never
	Now        func() time.Time
	Logger     *slog.Logger
}

// Manager is the process manager.
type Manager struct {
	feed   Feed
	cmds   Commands
	store  Store
	cfg    Config
	pruned time.Time // when the captures were last pruned
}

// New returns a manager.
func New(feed Feed, cmds Commands, store Store, cfg Config) *Manager {
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 500
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Owner == "" {
		cfg.Owner = uuid.NewString()
	}
	return &Manager{feed: feed, cmds: cmds, store: store, cfg: cfg}
}

// Run steps until ctx ends, waiting Poll when there was nothing to do.
func (m *Manager) Run(ctx context.Context) error {
	for {
		n, err := m.Step(ctx)
		if err != nil && ctx.Err() == nil {
			m.cfg.Logger.Warn("expectations: step failed; retrying", "error", err)
		}
		if n > 0 && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(m.cfg.Poll):
		}
	}
}

// Step takes the lease, applies one batch of the feed after the
// checkpoint, and decides the clock; it returns how many feed events it
// handled (0: caught up, or the lease is another instance's).
func (m *Manager) Step(ctx context.Context) (int, error) {
	at, ok, err := m.store.Lease(ctx, m.cfg.Owner, m.cfg.Lease)
	if err != nil || !ok {
		return 0, err
	}
	recs, err := m.feed.ReadAll(ctx, at, m.cfg.Batch)
	if err != nil {
		return 0, err
	}
	if len(recs) > 0 {
		if err := m.apply(ctx, recs); err != nil {
			return 0, err
		}
	}
	if err := m.clock(ctx); err != nil {
		return len(recs), err
	}
	if now := m.cfg.Now(); now.Sub(m.pruned) > time.Hour {
		if err := m.store.PruneCaptures(ctx, CaptureWindow); err != nil {
			return len(recs), err
		}
		m.pruned = now
	}
	return len(recs), nil
}

// apply handles one batch: the payment facts (captures; failures and
// cancels, which make a waiting expectation failed) are kept first (so that an
// expectation registered in the same batch finds them), then every
// expectation they name or that was registered is decided on, then the
// rows of the touched expectations are folded from their streams and saved
// with the checkpoint.
func (m *Manager) apply(ctx context.Context, recs []eventstore.RecordedEvent) error {
	var facts []PaymentFact
	touched := map[uuid.UUID]bool{}
	var registered []uuid.UUID
	for _, r := range recs {
		if id, ok := expectation.IDOfStream(r.StreamID); ok {
			touched[id] = true
			if r.Type == expectation.TypeRegistered {
				registered = append(registered, id)
			}
			continue
		}
		if !strings.HasPrefix(r.StreamID, delivery.PaymentStreamPrefix) ||
			(r.Type != payment.TypeCaptured && r.Type != payment.TypeFailed && r.Type != payment.TypeCanceled) {
			continue
		}
		e, err := payment.Decode(r.Type, r.Data)
		if err != nil {
			return fmt.Errorf("expectations: event %s: %w", r.ID, err)
		}
		facts = append(facts, paymentFacts(r, e)...)
	}
	if len(facts) > 0 {
		if err := m.store.RecordPayments(ctx, facts); err != nil {
			return err
		}
		if err := m.decidePayments(ctx, facts, touched); err != nil {
			return err
		}
	}
	for _, id := range registered {
		if err := m.decideRegistered(ctx, id); err != nil {
			return err
		}
	}
	rows := make([]Row, 0, len(touched))
	for id := range touched {
		row, ok, err := m.fold(ctx, id)
		if err != nil {
			return err
		}
		if ok {
			rows = append(rows, row)
		}
	}
	return m.store.Save(ctx, m.cfg.Owner, rows, recs[len(recs)-1].Position)
}

// decidePayments appends paid or failed to the expectations the facts
// name (a fact names IDOf(provider, reference) for each of its ids).
func (m *Manager) decidePayments(ctx context.Context, facts []PaymentFact, touched map[uuid.UUID]bool) error {
	ids := make([]uuid.UUID, 0, len(facts))
	for _, f := range facts {
		ids = append(ids, expectation.IDOf(f.Provider, f.Reference))
	}
	known, err := m.store.Registered(ctx, ids)
	if err != nil {
		return err
	}
	isKnown := map[uuid.UUID]bool{}
	for _, id := range known {
		isKnown[id] = true
	}
	for _, f := range facts {
		id := expectation.IDOf(f.Provider, f.Reference)
		if !isKnown[id] {
			continue
		}
		if err := m.decide(ctx, id, f); err != nil {
			return err
		}
		touched[id] = true
	}
	return nil
}

// decideRegistered pays (or fails) an expectation registered after its
// payment was recorded.
func (m *Manager) decideRegistered(ctx context.Context, id uuid.UUID) error {
	row, ok, err := m.fold(ctx, id)
	if err != nil || !ok {
		return err
	}
	facts, err := m.store.PaymentsOf(ctx, row.Provider, row.Reference)
	if err != nil {
		return err
	}
	for _, f := range facts {
		if err := m.decide(ctx, id, f); err != nil {
			return err
		}
	}
	return nil
}

func (m *Manager) decide(ctx context.Context, id uuid.UUID, f PaymentFact) error {
	var err error
	if f.Failed {
		_, err = m.cmds.Failure(ctx, id, expectation.FailureSeen{PaymentStream: f.PaymentStream, Reason: f.Reason, At: f.At})
	} else {
		_, err = m.cmds.Capture(ctx, id, expectation.CaptureSeen{PaymentStream: f.PaymentStream, CaptureID: f.CaptureID,
			Amount: f.Amount, Currency: f.Currency, At: f.At})
	}
	if err != nil {
		return fmt.Errorf("expectations: %s: %w", id, err)
	}
	return nil
}

// clock appends overdue to the expectations whose expires_at has passed
// (their rows change when the feed shows the events).
func (m *Manager) clock(ctx context.Context) error {
	now := m.cfg.Now()
	ids, err := m.store.DueOverdue(ctx, now, m.cfg.Batch)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := m.cmds.Clock(ctx, id, now); err != nil {
			return fmt.Errorf("expectations: clock %s: %w", id, err)
		}
	}
	return nil
}

// fold reads an expectation's stream into its row.
func (m *Manager) fold(ctx context.Context, id uuid.UUID) (Row, bool, error) {
	recs, err := m.feed.ReadStream(ctx, expectation.StreamID(id))
	if err != nil {
		return Row{}, false, err
	}
	h, err := command.Decode(recs, expectation.Decode)
	if err != nil {
		return Row{}, false, err
	}
	x := expectation.Fold(h)
	if !x.Exists() {
		return Row{}, false, nil
	}
	row := Row{Expectation: x, UpdatedAt: recs[len(recs)-1].RecordedAt}
	if m.cfg.QueryAfter > 0 && expectation.Asked(x.Provider) && !x.Terminal() {
		row.QueryAt = x.RegisteredAt.Add(m.cfg.QueryAfter)
	}
	return row, true, nil
}

// paymentFacts are the facts one payment event gives, under the payment's
// own id and each merchant reference its delivery named.
func paymentFacts(r eventstore.RecordedEvent, e payment.Event) []PaymentFact {
	m := e.Metadata()
	at := m.OccurredAt
	if at.IsZero() {
		at = r.RecordedAt
	}
	f := PaymentFact{Provider: m.Provider, PaymentStream: r.StreamID, At: at}
	switch e := e.(type) {
	case payment.Captured:
		f.CaptureID, f.Amount, f.Currency = e.CaptureID, e.Amount, e.Currency
	case payment.Failed:
		f.Failed, f.Reason, f.CaptureID, f.Amount, f.Currency = true, e.Reason, r.ID.String(), e.Amount, e.Currency
	case payment.Canceled:
		// An attempt voided or a trade closed unpaid (Alipay TRADE_CLOSED,
		// Stripe payment_intent.canceled): it failed, as far as the
		// expectation goes; a later capture still pays it.
		f.Failed, f.Reason, f.CaptureID = true, e.Reason, r.ID.String()
	default:
		return nil
	}
	refs := append([]string{m.PaymentKey}, references(r.Metadata)...)
	if c, ok := e.(payment.Captured); ok && c.SubMerchant != "" {
		// A service provider's payment (WeChat Pay sub_mchid): its
		// expectation is registered as "{sub_mchid}/{out_trade_no}", an
		// out_trade_no being unique within one sub-merchant only.
		for _, ref := range refs[1:] {
			refs = append(refs, c.SubMerchant+"/"+ref)
		}
	}
	out := make([]PaymentFact, 0, len(refs))
	seen := map[string]bool{}
	for _, ref := range refs {
		if ref == "" || seen[ref] {
			continue
		}
		seen[ref] = true
		g := f
		g.Reference = ref
		out = append(out, g)
	}
	return out
}

// references are the merchant's ids the ingest recorded in an event's
// metadata ("references").
func references(metadata []byte) []string {
	if !bytes.Contains(metadata, []byte(`"references"`)) {
		return nil
	}
	var md struct {
		References []string `json:"references"`
	}
	if json.Unmarshal(metadata, &md) != nil {
		return nil
	}
	return md.References
}
