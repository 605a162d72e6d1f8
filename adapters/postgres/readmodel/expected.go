package readmodel

import (
	"context"
	"time"

	"github.com/onceledger/onceledger/projections/views"
)

// ExpectedPayments streams the expected payments f selects, newest
// registration first (expected_payments_status_idx).
func (s *Store) ExpectedPayments(ctx context.Context, f views.ExpectedPaymentFilter, fn func(views.ExpectedPayment) error) error {
	var w where
	w.opt("status = ?", f.Status)
	w.opt("provider = ?", f.Provider)
	if k := f.After; k != nil {
		w.add("(registered_at, id) < (?, ?)", k.RegisteredAt, k.ID)
	}
	var e views.ExpectedPayment
	var paidAt, queryAt *time.Time
	sql := `SELECT id, provider, reference, amount, currency, expires_at, registered_at,
			status, late, payment_stream, capture_id, paid_amount, paid_currency, paid_at, updated_at, next_query_at
		FROM expected_payments` + w.sql() + ` ORDER BY registered_at DESC, id DESC` + w.limit(f.Limit)
	return s.each(ctx, "expected payments", sql, w.args,
		[]any{&e.ID, &e.Provider, &e.Reference, &e.Amount, &e.Currency, &e.ExpiresAt, &e.RegisteredAt, &e.Status, &e.Late,
			&e.PaymentStream, &e.CaptureID, &e.PaidAmount, &e.PaidCurrency, &paidAt, &e.UpdatedAt, &queryAt},
		func() error {
			e.PaidAt, e.NextQueryAt = derefTime(paidAt), derefTime(queryAt)
			e.ExpiresAt, e.RegisteredAt, e.UpdatedAt = e.ExpiresAt.UTC(), e.RegisteredAt.UTC(), e.UpdatedAt.UTC()
			return fn(e)
		})
}
