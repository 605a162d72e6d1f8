package projections

import (
	"context"
)

// heldBatches is how many batches a payments row stays in memory after
// its stream's last event, in a rebuild: a payment's events come close
// together in the feed (its deliveries within minutes or days), so most
// rows are folded from all their events before they are written, once.
const heldBatches = 4

// paymentHold keeps a rebuild lane's payments rows in memory while their
// streams are active, so that the shadow table gets each row once (COPY)
// instead of a read and an upsert per batch the stream appears in. A row
// whose stream shows up again after it was written is read back and
// upserted. Memory is bounded by the streams of the last heldBatches
// batches, not by the number of payments.
type paymentHold struct {
	rows    map[string]*heldPayment
	written map[uint64]struct{} // hashes of the streams with a row in the shadow (no false negatives)
	batch   int
}

type heldPayment struct {
	row    PaymentRow
	seen   int  // the last batch that touched it
	stored bool // the shadow has an older version of the row
}

func newPaymentHold() *paymentHold {
	return &paymentHold{rows: map[string]*heldPayment{}, written: map[uint64]struct{}{}}
}

// holdingWriter is the Writer of a payments lane: the payments rows go to
// the hold, everything else to the batch.
type holdingWriter struct {
	Batch
	h *paymentHold
}

func (w holdingWriter) Payments(ctx context.Context, streamIDs []string) (map[string]PaymentRow, error) {
	out := make(map[string]PaymentRow, len(streamIDs))
	var load []string
	for _, s := range streamIDs {
		if r, ok := w.h.rows[s]; ok {
			out[s] = r.row
			continue
		}
		if _, ok := w.h.written[streamHash64(s)]; ok {
			load = append(load, s)
		}
	}
	if len(load) == 0 {
		return out, nil
	}
	stored, err := w.Batch.Payments(ctx, load)
	if err != nil {
		return nil, err
	}
	for s, r := range stored {
		w.h.rows[s] = &heldPayment{row: r, seen: w.h.batch, stored: true}
		out[s] = r
	}
	return out, nil
}

func (w holdingWriter) UpsertPayments(ctx context.Context, rows []PaymentRow) error {
	for _, r := range rows {
		held, ok := w.h.rows[r.StreamID]
		if !ok {
			held = &heldPayment{}
			w.h.rows[r.StreamID] = held
		}
		if held.row.StreamID == "" || held.row.Version < r.Version {
			held.row = r
		}
		held.seen = w.h.batch
	}
	return nil
}

// release writes the rows idle for heldBatches batches (all of them when
// all) through b, and forgets them.
func (h *paymentHold) release(ctx context.Context, b Batch, all bool) error {
	var fresh, again []PaymentRow
	for s, r := range h.rows {
		if !all && h.batch-r.seen < heldBatches {
			continue
		}
		if r.stored {
			again = append(again, r.row)
		} else {
			fresh = append(fresh, r.row)
		}
		h.written[streamHash64(s)] = struct{}{}
		delete(h.rows, s)
	}
	if len(fresh) > 0 {
		if err := b.CopyPayments(ctx, fresh); err != nil {
			return err
		}
	}
	if len(again) > 0 {
		return b.UpsertPayments(ctx, again)
	}
	return nil
}

func streamHash64(s string) uint64 {
	// FNV-1a, 64 bits.
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
