package httpapi

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/domain/period"
	"github.com/onceledger/onceledger/projections/views"
)

// The period errors, wrapped as the operations service and the read model
// return them, get their statuses from statusFor.
func TestStatusForPeriodErrors(t *testing.T) {
	for err, want := range map[error]int{
		period.ErrInvalidPeriod:      http.StatusBadRequest,
		period.ErrActorRequired:      http.StatusBadRequest,
		period.ErrReasonRequired:     http.StatusBadRequest,
		period.ErrPeriodNotEnded:     http.StatusConflict,
		period.ErrEarlierPeriodOpen:  http.StatusConflict,
		period.ErrAlreadyClosed:      http.StatusConflict,
		period.ErrNotClosed:          http.StatusConflict,
		period.ErrLaterPeriodClosed:  http.StatusConflict,
		period.ErrZoneMismatch:       http.StatusConflict,
		operations.ErrContention:     http.StatusServiceUnavailable,
		views.ErrUnknownPeriod:       http.StatusNotFound,
		period.ErrInconsistentEvents: http.StatusServiceUnavailable,
	} {
		assert.Equal(t, want, statusFor(fmt.Errorf("close 2026-11: %w", err)), err.Error())
	}
}
