package httpapi

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/report"
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

// badInput is the one list of errors that mean the request itself is wrong
// (400: a retry cannot succeed, so the provider should stop): whatever the
// domain and the provider adapters refuse wraps one of these.
var badInput = []error{
	delivery.ErrMalformed,
	delivery.ErrMissingField,
	delivery.ErrInvalidAmount,
	money.ErrUnknownCurrency,
	money.ErrInvalidAmount,
	errBadParameter,
	report.ErrMalformed, // a settlement report: the error names line and column
}

func isBadInput(err error) bool {
	return slices.ContainsFunc(badInput, func(target error) bool { return errors.Is(err, target) })
}

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
	case errors.Is(err, errUnknownProvider), errors.Is(err, errNotFound), errors.Is(err, ErrNoReportImporter):
		return http.StatusNotFound
	case errors.Is(err, errMethodNotAllowed):
		return http.StatusMethodNotAllowed
	case isBadInput(err):
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
