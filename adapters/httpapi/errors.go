package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

// Sentinel errors of the HTTP layer itself.
var (
	errUnknownProvider = errors.New("unknown or unconfigured provider")
	errBadParameter    = errors.New("bad parameter")
	errUnauthenticated = errors.New("missing or invalid bearer token")
	errNotFound        = errors.New("not found")
	errOverloaded      = errors.New("too many concurrent requests for this provider")
)

// statusFor is the one place errors become HTTP statuses. Anything it does not
// recognise is treated as "could not record durably": 503, so the provider
// retries, because a 2xx must never be given for a fact that is not durable
// and a 500 invites no retry from some providers.
func statusFor(err error) int {
	if err == nil {
		return http.StatusOK
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, providers.ErrUnauthorized), errors.Is(err, errUnauthenticated):
		return http.StatusUnauthorized
	case errors.Is(err, errUnknownProvider), errors.Is(err, errNotFound):
		return http.StatusNotFound
	case errors.Is(err, errMethodNotAllowed):
		return http.StatusMethodNotAllowed
	case errors.Is(err, delivery.ErrMalformed),
		errors.Is(err, delivery.ErrMissingField),
		errors.Is(err, delivery.ErrInvalidAmount),
		errors.Is(err, money.ErrUnknownCurrency),
		errors.Is(err, money.ErrInvalidAmount),
		errors.Is(err, errBadParameter):
		return http.StatusBadRequest
	case errors.Is(err, eventstore.ErrUnavailable),
		errors.Is(err, ingest.ErrContention),
		errors.Is(err, errOverloaded),
		errors.Is(err, errQueryNotConfigured),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable
	default:
		return http.StatusServiceUnavailable
	}
}
