package projections

import (
	"context"
	"strings"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/domain/settlement"
)

// Payout batches paid out whole (docs/reference.md, "Provider balances";
// assertion.BatchAccount). Adyen states a batch's balance by the batch
// itself: its lines, the payout and what it carries to the next batch
// included, add up to zero. The ledger cannot be asserted on
// provider:adyen:balance as of the payout: that balance also holds the
// captures a webhook recorded that no batch has settled yet. So the
// projection keeps, per batch, the ledger's own view of it, as movements
// on the batch's scope (a copy of postings on provider:p:balance, nothing
// posted to the chart):
//
//   - the postings on provider:p:balance of every event a line of the
//     batch recorded (the line's delivery: a fact recorded from the line,
//     its fee, conversion, the payout, a counterpart adjustment), in every
//     currency (a conversion's two legs and its capture net out in the
//     original currency; the batch's currency is the one asserted);
//   - when a line settles a capture, refund, refund reversal or dispute
//     movement a webhook recorded before it, what that webhook posted on
//     provider:p:balance: it joins the batch the line names, once (the
//     first line that settles it claims it);
//   - a Balancetransfer line at its net: money moved between two batches
//     of one balance, which the ledger books nowhere.
//
// A line whose fact the ledger booked otherwise (settlement_mismatch: the
// first report stands) or not at all (ManualCorrected and the other lines
// that post nothing) leaves the ledger's view of its batch apart from the
// batch's own: the batch's assertion differs by exactly that.
//
// Links (batch_links) make this independent of batch boundaries: a line's
// dedup key names its batch for the rest of its delivery's events, and a
// webhook's fact waits, by payment stream and id, for its line.

// batchProviders are the providers whose payout batches are asserted.
var batchProviders = map[string]bool{"adyen": true}

// BatchLink is one batch_links row: a line's delivery and its batch
// (Key "line:" + dedup key, PayoutID), or a webhook's fact waiting for
// the line that settles it (Key "fact:" + stream + "|" + fact, Currency,
// Amount: what it posted on provider:p:balance, 0 once claimed; Event:
// the last event that changed it, so that a replayed event adds nothing).
type BatchLink struct {
	Key      string
	PayoutID string
	Currency money.Currency
	Amount   int64
	Event    uuid.UUID
}

// BatchWriter is the batch part of Writer.
type BatchWriter interface {
	// BatchLinks reads the stored links of keys (absent: none).
	BatchLinks(ctx context.Context, keys []string) (map[string]BatchLink, error)
	// UpsertBatchLinks writes links whole.
	UpsertBatchLinks(ctx context.Context, links []BatchLink) error
}

// Posting indexes of the batch scope's movements, apart from the event's
// own postings (balance_movements is keyed by event and posting index).
const (
	batchCopyIndex     = 1000 // + the posting's index: a copy of a line delivery's posting
	batchClaimIndex    = 900  // a webhook fact the line settles
	batchTransferIndex = 901  // a Balancetransfer line's net
)

// batchFact names the webhook fact an event posts (by its payment stream),
// and which line kind settles it; "" for none.
func batchFact(e payment.Event) string {
	switch e := e.(type) {
	case payment.Captured:
		return "capture:" + e.CaptureID
	case payment.RefundPosted:
		return "refund:" + e.RefundID
	case payment.RefundReversed:
		return "refund_reversed:" + e.RefundID
	case payment.DisputeOpened:
		return "dispute:" + e.DisputeID
	case payment.DisputeFundsWithdrawn:
		return "dispute:" + e.DisputeID
	case payment.DisputeLost:
		return "dispute:" + e.DisputeID
	case payment.DisputeFundsReinstated:
		return "dispute_reinstated:" + e.DisputeID
	case payment.DisputeWon:
		return "dispute_reinstated:" + e.DisputeID
	}
	return ""
}

// lineFact names the webhook fact a line settles; "" for none.
func lineFact(l settlement.Line) string {
	switch {
	case l.Kind == settlement.KindCharge && l.CaptureID != "":
		return "capture:" + l.CaptureID
	case l.Kind == settlement.KindRefund && l.RefundID != "":
		return "refund:" + l.RefundID
	case l.Kind == settlement.KindAdjustment && l.Reversal == settlement.ReversalRefund && l.RefundID != "":
		return "refund_reversed:" + l.RefundID
	case l.Kind == settlement.KindDispute && l.DisputeID != "":
		return "dispute:" + l.DisputeID
	case l.Kind == settlement.KindDisputeReversal && l.DisputeID != "":
		return "dispute_reinstated:" + l.DisputeID
	}
	return ""
}

// batchMovements returns what env moves in the batch scopes.
func (b *balancePass) batchMovements(ctx context.Context, env Envelope) ([]Movement, error) {
	if env.Event == nil {
		return nil, nil
	}
	m := env.Event.Metadata()
	if !batchProviders[m.Provider] {
		return nil, nil
	}
	ps, _, at := postingsOf(env)
	if at.IsZero() {
		at = env.Recorded.RecordedAt
	}
	balance := ledger.ProviderBalance(m.Provider)
	onBalance := func() (out []ledger.Posting) {
		for _, p := range ps {
			if p.Account == balance {
				out = append(out, p)
			}
		}
		return out
	}
	stream := env.Recorded.StreamID
	if !strings.HasPrefix(m.DedupKey, "settle:") {
		// A webhook's fact: it waits for the line that settles it.
		fact := batchFact(env.Event)
		bal := onBalance()
		if fact == "" || len(bal) == 0 {
			return nil, nil
		}
		key := "fact:" + stream + "|" + fact
		l, err := b.batchLink(ctx, key)
		if err != nil || l.Event == env.Recorded.ID {
			return nil, err
		}
		l.Key, l.Event = key, env.Recorded.ID
		for _, p := range bal {
			l.Currency = p.Currency
			if l.Amount, err = money.Add(l.Amount, p.Amount); err != nil {
				return nil, poison("event %s: batch fact %s: %w", env.Recorded.ID, key, err)
			}
		}
		return nil, b.putBatchLink(ctx, l)
	}
	var out []Movement
	add := func(payout string, index int, c money.Currency, amount int64) {
		if amount == 0 {
			return
		}
		out = append(out, Movement{EventID: env.Recorded.ID, PostingIndex: index,
			Account: assertion.BatchAccount(m.Provider, payout), Currency: c, EffectiveAt: at.UTC(), Amount: amount})
	}
	payout := ""
	if ls, ok := env.Event.(payment.LineSettled); ok {
		l := ls.Line
		payout = l.PayoutID
		if payout == "" {
			return nil, nil
		}
		if err := b.putBatchLink(ctx, BatchLink{Key: "line:" + m.DedupKey, PayoutID: payout, Event: env.Recorded.ID}); err != nil {
			return nil, err
		}
		if l.SourceType == "Balancetransfer" {
			add(payout, batchTransferIndex, l.Currency, l.Net)
		}
		if fact := lineFact(l); fact != "" {
			key := "fact:" + stream + "|" + fact
			f, err := b.batchLink(ctx, key)
			if err != nil {
				return nil, err
			}
			if f.Amount != 0 {
				add(payout, batchClaimIndex, f.Currency, f.Amount)
				f.Amount, f.Event = 0, env.Recorded.ID
				if err := b.putBatchLink(ctx, f); err != nil {
					return nil, err
				}
			}
		}
	} else {
		l, err := b.batchLink(ctx, "line:"+m.DedupKey)
		if err != nil {
			return nil, err
		}
		payout = l.PayoutID
	}
	if payout == "" {
		return out, nil
	}
	for i, p := range ps {
		if p.Account == balance {
			add(payout, batchCopyIndex+i, p.Currency, p.Amount)
		}
	}
	return out, nil
}

// batchKeys are the links env reads (batchMovements).
func batchKeys(env Envelope) []string {
	if env.Event == nil {
		return nil
	}
	m := env.Event.Metadata()
	if !batchProviders[m.Provider] {
		return nil
	}
	stream := env.Recorded.StreamID
	if !strings.HasPrefix(m.DedupKey, "settle:") {
		if fact := batchFact(env.Event); fact != "" {
			return []string{"fact:" + stream + "|" + fact}
		}
		return nil
	}
	if ls, ok := env.Event.(payment.LineSettled); ok {
		if fact := lineFact(ls.Line); fact != "" {
			return []string{"fact:" + stream + "|" + fact}
		}
		return nil
	}
	return []string{"line:" + m.DedupKey}
}

// prepareLinks reads, in one query, every link the batch's envelopes read.
func (b *balancePass) prepareLinks(ctx context.Context, batch []Envelope) error {
	var keys []string
	seen := map[string]bool{}
	for _, env := range batch {
		for _, k := range batchKeys(env) {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	b.links = map[string]BatchLink{}
	if len(keys) == 0 {
		return nil
	}
	got, err := b.w.BatchLinks(ctx, keys)
	if err != nil {
		return err
	}
	for _, k := range keys {
		l := got[k]
		l.Key = k
		b.links[k] = l
	}
	return nil
}

// batchLink reads one link: prepared, or written by the pass.
func (b *balancePass) batchLink(ctx context.Context, key string) (BatchLink, error) {
	if l, ok := b.links[key]; ok {
		return l, nil
	}
	got, err := b.w.BatchLinks(ctx, []string{key})
	if err != nil {
		return BatchLink{}, err
	}
	l := got[key]
	l.Key = key
	if b.links == nil {
		b.links = map[string]BatchLink{}
	}
	b.links[key] = l
	return l, nil
}

// putBatchLink writes one link when the pass stores its movements.
func (b *balancePass) putBatchLink(_ context.Context, l BatchLink) error {
	if b.links == nil {
		b.links = map[string]BatchLink{}
	}
	if !b.isDirty[l.Key] {
		if b.isDirty == nil {
			b.isDirty = map[string]bool{}
		}
		b.isDirty[l.Key] = true
		b.dirty = append(b.dirty, l.Key)
	}
	b.links[l.Key] = l
	return nil
}

// storeLinks writes the links the pass changed, in one statement.
func (b *balancePass) storeLinks(ctx context.Context) error {
	if len(b.dirty) == 0 {
		return nil
	}
	ls := make([]BatchLink, len(b.dirty))
	for i, k := range b.dirty {
		ls[i] = b.links[k]
	}
	b.dirty = b.dirty[:0]
	clear(b.isDirty)
	return b.w.UpsertBatchLinks(ctx, ls)
}
