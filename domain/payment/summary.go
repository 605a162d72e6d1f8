package payment

import "github.com/onceledger/onceledger/domain/money"

// Summary is the read side's view of one payment: what the payments read
// model stores per row. It is folded from the stream's events with Apply, and
// every field maps to a column, so a projection can load a row, Apply one
// event and write it back.
type Summary struct {
	Currency       money.Currency
	Authorized     int64
	Captured       int64
	Fees           int64
	Refunded       int64 // posted refunds, net of reversals
	RefundsPending int64 // refunds waiting for a capture
	DisputeOpen    int64 // disputed and not yet decided
	DisputeLost    int64
	Failed         bool
	// FailedAmount is the attempted amount of the payment's failure, when
	// its provider reported it (in Currency); it moves no money.
	FailedAmount int64
	Canceled     bool
	// SubMerchant is the merchant a service provider took the payment for
	// (WeChat Pay sub_mchid), from the first capture that names one; empty
	// for a direct merchant.
	SubMerchant string
}

// Apply folds one event into the summary. Events that do not change amounts
// (reconciliation items, payouts) leave it as it is.
//
// Sums saturate instead of wrapping: a projection folding a history whose
// totals leave int64 (possible only for data recorded before amounts were
// bounded) must keep going, and a pinned total is visibly wrong where a
// wrapped one would look plausible.
func (s *Summary) Apply(e Event) {
	add := money.SaturatingAdd
	switch e := e.(type) {
	case Authorized:
		s.Authorized = add(s.Authorized, e.Amount)
		s.currency(e.Currency)
	case Captured:
		s.Captured = add(s.Captured, e.Amount)
		s.Fees = add(s.Fees, e.Fee)
		s.currency(e.Currency)
		if s.SubMerchant == "" {
			s.SubMerchant = e.SubMerchant
		}
	case FeeRecorded:
		s.Fees = add(s.Fees, e.Fee)
	case CaptureReduced:
		s.Captured = add(s.Captured, -e.Amount)
	case Failed:
		s.Failed = true
		s.failedAttempt(e)
	case Canceled:
		s.Canceled = true
	case RefundPending:
		s.RefundsPending = add(s.RefundsPending, e.Amount)
		s.currency(e.Currency)
	case RefundPosted:
		s.Refunded = add(s.Refunded, e.Amount)
		if e.WasPending {
			s.RefundsPending = add(s.RefundsPending, -e.Amount)
		}
		s.currency(e.Currency)
	case RefundReversed:
		if e.WasPending {
			s.RefundsPending = add(s.RefundsPending, -e.Amount)
		} else {
			s.Refunded = add(s.Refunded, -e.Amount)
		}
	case DisputeOpened:
		s.DisputeOpen = add(s.DisputeOpen, e.Amount)
		s.currency(e.Currency)
	case DisputeFundsWithdrawn:
		s.DisputeOpen = add(s.DisputeOpen, e.Amount)
		s.currency(e.Currency)
	case DisputeInquiry, DisputePending:
		// No money held: visible among the payment's events, not in its
		// amounts. The currency is the payment's all the same.
		if i, ok := e.(DisputeInquiry); ok {
			s.currency(i.Currency)
		} else {
			s.currency(e.(DisputePending).Currency)
		}
	case DisputeFundsReinstated:
		s.DisputeOpen = add(s.DisputeOpen, -e.Amount)
	case DisputeWon:
		if !e.NoFunds {
			s.DisputeOpen = add(s.DisputeOpen, -e.Amount)
		}
	case DisputeLost:
		if !e.ReversesWin { // a win had already closed it
			s.DisputeOpen = add(s.DisputeOpen, -e.Amount)
		}
		s.DisputeLost = add(s.DisputeLost, e.Amount)
	}
}

// failedAttempt keeps a failure's attempted amount, in the payment's
// currency only: a payment has one currency, and an attempt in another
// (none has been seen) would show under the wrong one.
func (s *Summary) failedAttempt(e Failed) {
	if e.Currency == "" {
		return
	}
	s.currency(e.Currency)
	if s.Currency == e.Currency {
		s.FailedAmount = e.Amount
	}
}

func (s *Summary) currency(c money.Currency) {
	if s.Currency == "" {
		s.Currency = c
	}
}

// Payment statuses, as Status reports them.
const (
	StatusPending           = "pending"
	StatusAuthorized        = "authorized"
	StatusFailed            = "failed"
	StatusCanceled          = "canceled"
	StatusCaptured          = "captured"
	StatusPartiallyRefunded = "partially_refunded"
	StatusRefunded          = "refunded"
	StatusDisputed          = "disputed"
	StatusDisputeLost       = "dispute_lost"
)

// Status is derived from the amounts only, so it does not depend on the order
// in which events arrived: one of "pending", "authorized", "failed",
// "canceled", "captured", "partially_refunded", "refunded", "disputed",
// "dispute_lost".
//
// Precedence, most telling first: an open dispute (money held) outranks
// everything; then a lost dispute once nothing is open; then refunds against
// captures; then a capture; then the terminal non-money outcomes (canceled,
// failed: a payment that was captured after all is captured); then an
// authorization. Otherwise pending, e.g. only a refund waiting for its capture.
func (s Summary) Status() string {
	switch {
	case s.DisputeOpen > 0:
		return StatusDisputed
	case s.DisputeLost > 0:
		return StatusDisputeLost
	case s.Captured > 0 && s.Refunded >= s.Captured:
		return StatusRefunded
	case s.Refunded > 0:
		return StatusPartiallyRefunded
	case s.Captured > 0:
		return StatusCaptured
	case s.Canceled:
		return StatusCanceled
	case s.Failed:
		return StatusFailed
	case s.Authorized > 0:
		return StatusAuthorized
	}
	return StatusPending
}
