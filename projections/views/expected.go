package views

import (
	"time"

	"github.com/google/uuid"
)

// ExpectedPayment is one expected_payments row (GET /v1/expected-payments,
// the console): what the expectation's own events say, folded by the
// expectation process manager (adapters/expectations).
type ExpectedPayment struct {
	ID            uuid.UUID
	Provider      string
	Reference     string
	Amount        int64
	Currency      string
	ExpiresAt     time.Time
	RegisteredAt  time.Time
	Status        string
	Late          bool
	PaymentStream string
	CaptureID     string
	PaidAmount    int64
	PaidCurrency  string
	PaidAt        time.Time
	UpdatedAt     time.Time
	NextQueryAt   time.Time // zero: not asked (any more)
}

// ExpectedPaymentFilter selects expected payments, newest registration
// first; After continues a page after (RegisteredAt, ID).
type ExpectedPaymentFilter struct {
	Status   string
	Provider string
	Limit    int
	After    *ExpectedPaymentKey
}

// ExpectedPaymentKey is a page's position.
type ExpectedPaymentKey struct {
	RegisteredAt time.Time
	ID           uuid.UUID
}
