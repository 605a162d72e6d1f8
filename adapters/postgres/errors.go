package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// markUnavailable marks errors that mean "the database could not be reached
// or did not answer in time" as eventstore.ErrUnavailable (keeping the
// original in the chain), so callers can answer 503 and let the sender
// retry. Other errors are returned unchanged.
func markUnavailable(err error) error {
	if err == nil || errors.Is(err, eventstore.ErrUnavailable) {
		return err
	}
	if unavailable(err) {
		return fmt.Errorf("%w: %w", eventstore.ErrUnavailable, err)
	}
	return err
}

func unavailable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) || pgconn.SafeToRetry(err) {
		return true
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgerrcode.IsConnectionException(pgErr.Code):
			return true
		case pgErr.Code == pgerrcode.AdminShutdown, pgErr.Code == pgerrcode.CrashShutdown, pgErr.Code == pgerrcode.CannotConnectNow:
			return true
		case pgErr.Code == pgerrcode.QueryCanceled: // statement_timeout
			return true
		case pgErr.Code == pgerrcode.TooManyConnections:
			return true
		}
	}
	return false
}
