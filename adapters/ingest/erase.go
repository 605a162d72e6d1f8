package ingest

import (
	"errors"
	"fmt"
	"strings"

	"github.com/onceledger/onceledger/domain/delivery"
)

// Raw bodies carry personal data (IPN especially: names, emails,
// addresses). They are erased after the retention period
// (ONCELEDGER_RAW_RETENTION) or on request (`onceledger erase`,
// POST /v1/inbox/erase): the row keeps its payload hash, its normalized
// facts and its status, and the events stay. Nothing that records or
// re-records facts needs the raw body (the sweeper, a re-drive from
// "received" or "failed", rebuild and verify read the normalized facts or
// the events); what does (a postback, a re-normalization with newer code)
// fails with ErrRawErased for an erased row. Held candidates still waiting
// for their postback are never erased by retention.

// Erasure selects the raw bodies to erase: one delivery (Provider and
// DedupKey; for a held provider its unverified candidates too) or every
// delivery of one payment (Provider and PaymentID).
type Erasure struct {
	Provider  string
	DedupKey  string
	PaymentID string
	// Actor is who asked (the admin token's name, the operator); Reason is
	// ErasureRequest or ErasureRetention. Both go to the audit record.
	Actor  string
	Reason string
}

// Erasure reasons, as raw_erasures.reason records them.
const (
	ErasureRequest   = "request"
	ErasureRetention = "retention"
)

// ErrBadErasure: the selection names no delivery and no payment, or both.
var ErrBadErasure = errors.New("an erasure names a provider and either a dedup key or a payment id")

// ParsePayment reads "provider/payment_id" (as `--payment` takes it).
func ParsePayment(s string) (provider, paymentID string, err error) {
	provider, paymentID, ok := strings.Cut(s, "/")
	if !ok || provider == "" || paymentID == "" {
		return "", "", fmt.Errorf("%w: --payment wants PROVIDER/PAYMENT_ID, got %q", ErrBadErasure, s)
	}
	return provider, paymentID, nil
}

// Validate checks the selection.
func (e Erasure) Validate() error {
	if e.Provider == "" || (e.DedupKey == "") == (e.PaymentID == "") {
		return ErrBadErasure
	}
	if e.Actor == "" {
		return fmt.Errorf("%w: no actor", ErrBadErasure)
	}
	return nil
}

// Stream is the payment stream a payment selection names.
func (e Erasure) Stream() string { return delivery.PaymentStream(e.Provider, e.PaymentID) }

// Selector describes the selection for the audit record.
func (e Erasure) Selector() string {
	if e.DedupKey != "" {
		return "delivery " + e.Provider + " " + e.DedupKey
	}
	return "payment " + e.Provider + "/" + e.PaymentID
}

// Erased counts the rows whose raw body an erasure removed.
type Erased struct {
	InboxRows    int `json:"inbox_rows"`
	ConflictRows int `json:"conflict_rows"`
}
