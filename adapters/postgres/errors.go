package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// classify marks errors that mean "the database could not be reached or did
// not answer in time" as eventstore.ErrUnavailable (keeping the original in
// the chain), so callers can answer 503 and let the sender retry. Other
// errors are returned unchanged.
func classify(err error) error {
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
		case strings.HasPrefix(pgErr.Code, "08"): // connection exception
			return true
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03": // admin/crash shutdown, cannot connect now
			return true
		case pgErr.Code == "57014": // query_canceled: statement_timeout
			return true
		case pgErr.Code == "53300": // too_many_connections
			return true
		}
	}
	return false
}
