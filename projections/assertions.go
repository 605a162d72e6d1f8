package projections

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections/views"
)

// The provider-balance part of the reconciliation projection: balance
// assertions compared with the ledger, and the balance_mismatch items
// (docs/reference.md, "Provider balances").
//
// The projection keeps its own copy of the postings on accounts a
// provider or bank states (balance_movements), so that every figure
// depends on the feed alone, live and in a rebuild. Each stored
// assertion's ledger figure is the sum of the stored movements of its
// account and currency up to its as_of; a movement inserted at t adds
// itself to the assertions as of t or later (an index range on
// (account, currency, as_of)), so a late fact costs the assertions at or
// after its moment, and a new assertion costs one indexed sum from the
// nearest earlier one.
//
// An item changes only at an event that can change an assertion: a
// statement, or a movement not after the latest assertion of its account
// (the usual live webhook, newer than every statement, is stored in bulk
// and checks nothing). It is then evaluated at that event, so the item's
// times and event ids are the same whatever the batch boundaries (a
// rebuild batches differently from the live projector).

// AccountKey is one account and currency.
type AccountKey struct {
	Account  string
	Currency money.Currency
}

// Movement is one posting on an account a provider or bank states, as a
// balance_movements row.
type Movement struct {
	EventID      uuid.UUID
	PostingIndex int
	Account      string
	Currency     money.Currency
	EffectiveAt  time.Time
	Amount       int64
}

// MovementSum is the sum of an account's movements at one moment.
type MovementSum struct {
	At     time.Time
	Amount int64
}

// AssertionRow is one balance_assertions row.
type AssertionRow = views.BalanceAssertion

// Mismatch is what decides an account's balance_mismatch item: its first
// and last differing assertions (nil: none differs) and the stored item
// (nil: never opened).
type Mismatch struct {
	First, Last *views.BalanceAssertion
	Item        *views.ReconciliationItem
}

// AssertionWriter is the provider-balance part of Writer.
type AssertionWriter interface {
	// InsertMovements stores movements, skipping those on record (event
	// id, posting index), and adds exactly the inserted ones to the
	// ledger figure of the assertions of their account and currency as
	// of their moment or later.
	InsertMovements(ctx context.Context, ms []Movement) error
	// LatestAssertions returns the latest as_of of each key's assertions;
	// keys without any are absent.
	LatestAssertions(ctx context.Context, keys []AccountKey) (map[AccountKey]time.Time, error)
	// LedgerAsOf is the sum of the key's stored movements up to at.
	LedgerAsOf(ctx context.Context, k AccountKey, at time.Time) (int64, error)
	// MovementSums sums the key's movements per moment in (after, upTo],
	// ascending.
	MovementSums(ctx context.Context, k AccountKey, after, upTo time.Time) ([]MovementSum, error)
	// InsertAssertions stores rows, skipping those on record (stream,
	// key).
	InsertAssertions(ctx context.Context, rows []AssertionRow) error
	// Mismatch reads what decides the key's balance_mismatch item.
	Mismatch(ctx context.Context, k AccountKey) (Mismatch, error)
	// RecordActor records who made the entries of an event (an opening
	// balance, an adjustment): the journal's actor.
	RecordActor(ctx context.Context, a EntryActor) error
}

// EntryActor is who made the entries of one event, and why.
type EntryActor struct {
	EventID     uuid.UUID
	Actor, Note string
	Kind        string // the event's type
}

// Stated reports whether account is one whose balance a provider or bank
// states: its postings are balance movements.
func Stated(account string) bool {
	_, ok := assertion.ProviderOf(account)
	return ok
}

// balancePass carries one batch of the reconciliation projection through
// its provider-balance work.
type balancePass struct {
	w       Writer
	latest  map[AccountKey]time.Time
	pending []Movement
	links   map[string]BatchLink // batch_links read or written by the pass (batches.go)
	asked   map[AccountKey]bool  // keys latestOf read (without an assertion then)
	dirty   []string             // links changed by the pass, not written yet, in order
	isDirty map[string]bool      // the keys of dirty
	// flush applies the reconciliation changes collected so far, before
	// the pass writes its own: an item's changes stay in feed order.
	flush func(ctx context.Context) error
	// moves are the batch's envelopes' movementsOf, by index: prepare
	// computes them and apply takes them (deriving an event's postings
	// twice was a tenth of a rebuild's CPU; docs/benchmarks.md, issue 40).
	moves [][]Movement
}

// movementsOf returns an envelope's postings on stated accounts, and when
// they take effect.
func movementsOf(env Envelope) []Movement {
	ps, _, at := postingsOf(env)
	if at.IsZero() {
		at = env.Recorded.RecordedAt
	}
	var out []Movement
	for i, p := range ps {
		if Stated(p.Account) {
			out = append(out, Movement{EventID: env.Recorded.ID, PostingIndex: i, Account: p.Account,
				Currency: p.Currency, EffectiveAt: at.UTC(), Amount: p.Amount})
		}
	}
	return out
}

// prepare reads the latest assertion of every key the batch touches.
func (b *balancePass) prepare(ctx context.Context, batch []Envelope) error {
	seen := map[AccountKey]bool{}
	var keys []AccountKey
	add := func(k AccountKey) {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	b.moves = make([][]Movement, len(batch))
	for i, env := range batch {
		b.moves[i] = movementsOf(env)
		for _, m := range b.moves[i] {
			add(AccountKey{m.Account, m.Currency})
		}
		if s, ok := env.Assertion.(assertion.Stated); ok {
			add(AccountKey{s.Account, s.Currency})
		}
	}
	if err := b.prepareLinks(ctx, batch); err != nil { // batches.go
		return err
	}
	if len(keys) == 0 {
		b.latest = map[AccountKey]time.Time{}
		return nil
	}
	var err error
	b.latest, err = b.w.LatestAssertions(ctx, keys)
	return err
}

// latestOf reads the latest assertion of the keys of ms that prepare did
// not read (a batch scope's, known only once its envelope is applied).
func (b *balancePass) latestOf(ctx context.Context, ms []Movement) error {
	var keys []AccountKey
	for _, m := range ms {
		k := AccountKey{m.Account, m.Currency}
		if _, ok := b.latest[k]; ok || slices.Contains(keys, k) || b.asked[k] {
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil
	}
	got, err := b.w.LatestAssertions(ctx, keys)
	if err != nil {
		return err
	}
	if b.asked == nil {
		b.asked = map[AccountKey]bool{}
	}
	for _, k := range keys {
		b.asked[k] = true
		if at, ok := got[k]; ok {
			b.latest[k] = at
		}
	}
	return nil
}

// apply takes the envelope of index i of the batch prepare saw, in feed
// order.
func (b *balancePass) apply(ctx context.Context, i int, env Envelope) error {
	ms := b.moves[i]
	b.moves[i] = nil                       // ms is this call's own to append to
	bms, err := b.batchMovements(ctx, env) // batches.go
	if err != nil {
		return err
	}
	if len(bms) > 0 {
		if err := b.latestOf(ctx, bms); err != nil {
			return err
		}
		ms = append(ms, bms...)
	}
	var touched []AccountKey
	for _, m := range ms {
		k := AccountKey{m.Account, m.Currency}
		if l, ok := b.latest[k]; ok && !m.EffectiveAt.After(l) && !slices.Contains(touched, k) {
			touched = append(touched, k)
		}
	}
	b.pending = append(b.pending, ms...)
	switch e := env.Assertion.(type) {
	case assertion.Stated:
		if err := b.store(ctx); err != nil {
			return err
		}
		return b.stated(ctx, env, e)
	case assertion.ItemResolved, assertion.ItemReopened:
		if err := b.store(ctx); err != nil {
			return err
		}
		return b.itemAction(ctx, env)
	}
	if len(postingsOnly(env)) > 0 { // a person's entries: the journal names them
		if actor, note := actorNote(env.Assertion); actor != "" {
			if err := b.w.RecordActor(ctx, EntryActor{EventID: env.Recorded.ID, Actor: actor, Note: note, Kind: env.Recorded.Type}); err != nil {
				return err
			}
		}
	}
	adj, adjusted := env.Assertion.(assertion.Adjusted)
	if len(touched) == 0 && !adjusted {
		return nil
	}
	if err := b.store(ctx); err != nil {
		return err
	}
	for _, k := range touched {
		if err := b.evaluate(ctx, env, k); err != nil {
			return err
		}
	}
	if adjusted && adj.Reverses == uuid.Nil {
		return b.adjusted(ctx, env, adj)
	}
	return nil
}

// adjusted resolves the item an adjustment names, with its actor and note
// (after the adjustment's own postings were weighed: the operator's
// resolve is the item's last word).
func (b *balancePass) adjusted(ctx context.Context, env Envelope, a assertion.Adjusted) error {
	stream, kind, key, err := views.ParseReconciliationID(a.ItemID)
	if err != nil {
		return nil // decided against a listed id; nothing to resolve
	}
	if err := b.flush(ctx); err != nil {
		return err
	}
	return b.w.ApplyReconciliation(ctx, []ReconciliationChange{{StreamID: stream, Kind: kind, Key: key,
		Actor: a.Actor, Note: a.Note, Provider: a.Provider, At: env.Recorded.RecordedAt, EventID: env.Recorded.ID}})
}

// store writes the pending movements (and the batch links the pass
// changed).
func (b *balancePass) store(ctx context.Context) error {
	if err := b.storeLinks(ctx); err != nil {
		return err
	}
	if len(b.pending) == 0 {
		return nil
	}
	err := b.w.InsertMovements(ctx, b.pending)
	b.pending = b.pending[:0]
	return err
}

// stated stores a statement's points with the ledger's figure as of each.
func (b *balancePass) stated(ctx context.Context, env Envelope, s assertion.Stated) error {
	if len(s.Points) == 0 {
		return nil
	}
	k := AccountKey{s.Account, s.Currency}
	pts := slices.Clone(s.Points)
	slices.SortStableFunc(pts, func(x, y assertion.Point) int { return x.AsOf.Compare(y.AsOf) })
	first, last := pts[0].AsOf, pts[len(pts)-1].AsOf
	base, err := b.w.LedgerAsOf(ctx, k, first)
	if err != nil {
		return err
	}
	sums, err := b.w.MovementSums(ctx, k, first, last)
	if err != nil {
		return err
	}
	rows := make([]AssertionRow, len(pts))
	running, i := base, 0
	for j, p := range pts {
		for ; i < len(sums) && !sums[i].At.After(p.AsOf); i++ {
			if running, err = money.Add(running, sums[i].Amount); err != nil {
				return poison("event %s: ledger of %s %s: %w", env.Recorded.ID, k.Account, k.Currency, err)
			}
		}
		rows[j] = AssertionRow{StreamID: env.Recorded.StreamID, Key: p.Key, Provider: s.Provider, Account: s.Account,
			Currency: string(s.Currency), AsOf: p.AsOf.UTC(), Stated: p.Amount, Ledger: running, Source: s.Source,
			Actor: s.Actor, Note: s.Note, RecordedAt: env.Recorded.RecordedAt, EventID: env.Recorded.ID}
	}
	if err := b.w.InsertAssertions(ctx, rows); err != nil {
		return err
	}
	if l, ok := b.latest[k]; !ok || last.After(l) {
		b.latest[k] = last
	}
	return b.evaluate(ctx, env, k)
}

// evaluate opens, updates or resolves the key's balance_mismatch item as
// its assertions now stand, at env.
func (b *balancePass) evaluate(ctx context.Context, env Envelope, k AccountKey) error {
	m, err := b.w.Mismatch(ctx, k)
	if err != nil {
		return err
	}
	provider, _ := assertion.ProviderOf(k.Account)
	c := ReconciliationChange{StreamID: assertion.StreamID(k.Account, k.Currency), Kind: assertion.ReconBalanceMismatch,
		Key: assertion.ItemKey(k.Account, k.Currency), Provider: provider, PaymentID: "",
		At: env.Recorded.RecordedAt, EventID: env.Recorded.ID}
	switch {
	case m.First != nil:
		c.Details, c.Open = MismatchDetails(*m.First, *m.Last), true
		if it := m.Item; it != nil && it.Details == c.Details && (it.Status == "open" || it.ResolvedBy != "") {
			return nil // as it was; an operator's resolve stands until the figures change
		}
	case m.Item != nil && m.Item.Status == "open":
		c.Details = "every assertion of " + k.Account + " " + string(k.Currency) + " agrees with the ledger"
	default:
		return nil
	}
	if err := b.flush(ctx); err != nil {
		return err
	}
	return b.w.ApplyReconciliation(ctx, []ReconciliationChange{c})
}

// MismatchDetails names an account's difference: the latest differing
// assertion's, and where the first differing one lies (the day of the
// fault).
func MismatchDetails(first, last views.BalanceAssertion) string {
	c := money.Currency(last.Currency)
	d := fmt.Sprintf("%s %s: ledger %s, stated %s as of %s (difference %s)", last.Account, last.Currency,
		money.FormatMinor(last.Ledger, c), money.FormatMinor(last.Stated, c), last.AsOf.UTC().Format(time.RFC3339),
		money.FormatMinor(last.Difference(), c))
	if first.StreamID != last.StreamID || first.Key != last.Key {
		d += fmt.Sprintf("; first differs as of %s (difference %s)", first.AsOf.UTC().Format(time.RFC3339),
			money.FormatMinor(first.Difference(), c))
	}
	return d
}

// itemAction records an operator's resolve or reopen of the stream's
// balance_mismatch item.
func (b *balancePass) itemAction(ctx context.Context, env Envelope) error {
	c := ReconciliationChange{StreamID: env.Recorded.StreamID, At: env.Recorded.RecordedAt, EventID: env.Recorded.ID}
	switch e := env.Assertion.(type) {
	case assertion.ItemResolved:
		c.Kind, c.Key, c.Actor, c.Note = e.Kind, e.Key, e.Actor, e.Note
	case assertion.ItemReopened:
		c.Kind, c.Key, c.Actor, c.Note, c.Open = e.Kind, e.Key, e.Actor, e.Note, true
	}
	if acct, _, ok := splitItemKey(c.Key); ok {
		c.Provider, _ = assertion.ProviderOf(acct)
	}
	if err := b.flush(ctx); err != nil {
		return err
	}
	return b.w.ApplyReconciliation(ctx, []ReconciliationChange{c})
}

func splitItemKey(key string) (account, currency string, ok bool) {
	i := len(key) - 1
	for ; i >= 0 && key[i] != '/'; i-- {
	}
	if i <= 0 {
		return "", "", false
	}
	return key[:i], key[i+1:], true
}

// postingsOf is what an envelope posts to the ledger: a payment or payout
// event's postings, or an opening balance's or adjustment's, with the
// provider they are booked under and their effective time (zero: the
// event's recorded time).
func postingsOf(env Envelope) (ps []ledger.Posting, provider string, at time.Time) {
	switch {
	case env.Assertion != nil:
		at, provider = assertion.Effective(env.Assertion)
		return assertion.Postings(env.Assertion), provider, at
	case env.Event != nil:
		m := env.Event.Metadata()
		return payment.Postings(env.Event), m.Provider, m.OccurredAt
	}
	return nil, "", time.Time{}
}

// postingsOnly is what an assertion stream's event posts (opening
// balances, adjustments).
func postingsOnly(env Envelope) []ledger.Posting {
	if env.Assertion == nil {
		return nil
	}
	return assertion.Postings(env.Assertion)
}

// actorNote is who made an event of an assertion stream, and why.
func actorNote(e assertion.Event) (actor, note string) {
	switch e := e.(type) {
	case assertion.Opened:
		return e.Actor, e.Note
	case assertion.Adjusted:
		return e.Actor, e.Note
	}
	return assertion.Actor(e), ""
}
