package httpapi

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/onceledger/onceledger/adapters/bankfile"
	"github.com/onceledger/onceledger/adapters/bankimport"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/adapters/outbox"
	"github.com/onceledger/onceledger/adapters/params"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/expectation"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/domain/period"
	"github.com/onceledger/onceledger/projections/views"
)

// Sentinel errors of the HTTP layer itself.
var (
	errUnknownProvider = errors.New("unknown or unconfigured provider")
	errUnauthenticated = errors.New("missing or invalid bearer token")
	errForbidden       = errors.New("forbidden")
	errNotFound        = errors.New("not found")
	errOverloaded      = errors.New("too many concurrent requests for this provider")
	// errBadParameter is the shared parser's (package params), so that a
	// parameter error of either front end is the same 400.
	errBadParameter = params.ErrBadParameter
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
	period.ErrInvalidPeriod,
	period.ErrActorRequired,
	period.ErrReasonRequired,
	errExportRange, // an export's range or format: the error names the parameter (export.go)
	errExportFormat,
	ingest.ErrBadErasure,
	payment.ErrNoteRequired,
	payment.ErrActorRequired,
	ingest.ErrBadRedrive,
	report.ErrMalformed, // a settlement report: the error names line and column
	outbox.ErrInvalid,
	outbox.ErrActorRequired,
	bankfile.ErrMalformed, // a bank statement: the error names line (or XML path) and field
	bankimport.ErrAccount, // a bank account name the ledger cannot use
	assertion.ErrInvalid,  // each names its field
	operations.ErrItemUnknown,
	operations.ErrClosedPeriod,
	expectation.ErrInvalid, // a registration: the error names the field
	expectation.ErrActorRequired,
}

// conflicts are the refusals of an action (period close or reopen, resolving
// or reopening an item) that the state of
// the books explains (409: another action first, or later).
var conflicts = []error{
	period.ErrPeriodNotEnded,
	period.ErrEarlierPeriodOpen,
	period.ErrAlreadyClosed,
	period.ErrNotClosed,
	period.ErrLaterPeriodClosed,
	period.ErrZoneMismatch,
	payment.ErrItemResolved,
	payment.ErrItemOpen,
	assertion.ErrConflict,
	expectation.ErrConflict, // the reference is expected with another amount or currency
	expectation.ErrPaid,
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
	case errors.Is(err, errUploadStalled):
		return http.StatusRequestTimeout
	case errors.Is(err, providers.ErrUnauthorized), errors.Is(err, errUnauthenticated):
		return http.StatusUnauthorized
	case errors.Is(err, errForbidden):
		return http.StatusForbidden
	case errors.Is(err, errUnknownProvider), errors.Is(err, errNotFound), errors.Is(err, views.ErrUnknownPeriod),
		errors.Is(err, payment.ErrItemNotFound), errors.Is(err, ErrNoReportImporter), errors.Is(err, outbox.ErrNotFound):
		return http.StatusNotFound
	case slices.ContainsFunc(conflicts, func(target error) bool { return errors.Is(err, target) }):
		return http.StatusConflict
	case errors.Is(err, errExportUnmapped):
		// The books hold an account the export's table cannot name: the
		// ONCELEDGER_EXPORT_ACCOUNTS file needs a line (the error names it).
		return http.StatusUnprocessableEntity
	case errors.Is(err, errMethodNotAllowed):
		return http.StatusMethodNotAllowed
	case isBadInput(err):
		return http.StatusBadRequest
	case errors.Is(err, eventstore.ErrUnavailable),
		errors.Is(err, ingest.ErrContention),
		errors.Is(err, operations.ErrContention),
		errors.Is(err, errOverloaded),
		errors.Is(err, errQueryNotConfigured),
		// The server cannot seal a subscription's secret: its
		// configuration, not the request, is missing something.
		errors.Is(err, outbox.ErrNoSecretsKey),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable
	default:
		return http.StatusServiceUnavailable
	}
}
