package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/adapters/esdb"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres"
)

// eventStorePostgres is the ONCELEDGER_EVENT_STORE value (and default) that
// keeps the events in the Postgres database of ONCELEDGER_DATABASE_URL.
const eventStorePostgres = "postgres"

// esdbSchemes maps the accepted connection string schemes to the one the
// EventStore-Client-Go v4 client parses. KurrentDB speaks the same gRPC
// protocol, but the v4 client only knows "esdb"; its successor
// (KurrentDB-Client-Go) also accepts "kurrentdb", so both are taken here and
// a configuration written for either client works.
var esdbSchemes = map[string]string{
	"esdb":               "esdb",
	"esdb+discover":      "esdb+discover",
	"kurrentdb":          "esdb",
	"kurrentdb+discover": "esdb+discover",
}

// usesPostgresEventStore tells whether setting selects the Postgres event
// store, so a command that needs Postgres only for events can skip the pool.
func usesPostgresEventStore(setting string) bool {
	s := strings.TrimSpace(setting)
	return s == "" || strings.EqualFold(s, eventStorePostgres)
}

// openEventStore opens the event store ONCELEDGER_EVENT_STORE selects:
// "postgres" (the default, also for an empty setting) uses pool, which the
// caller keeps owning; an esdb://, esdb+discover://, kurrentdb:// or
// kurrentdb+discover:// connection string dials EventStoreDB / KurrentDB
// (lazily: no connection is made before the first call) and ignores pool.
// closeFn releases what openEventStore opened and is never nil on success.
func openEventStore(ctx context.Context, setting string, pool *pgxpool.Pool) (store eventstore.Store, closeFn func() error, isPostgres bool, err error) {
	_ = ctx // dialing is lazy; kept so callers need not change if that stops being true
	if usesPostgresEventStore(setting) {
		if pool == nil {
			return nil, nil, false, errors.New("ONCELEDGER_EVENT_STORE=postgres needs a database connection (ONCELEDGER_DATABASE_URL)")
		}
		return postgres.NewEventStore(pool), func() error { return nil }, true, nil
	}
	conn, err := esdbConnString(setting)
	if err != nil {
		return nil, nil, false, err
	}
	s, err := esdb.Dial(conn)
	if err != nil {
		return nil, nil, false, fmt.Errorf("ONCELEDGER_EVENT_STORE=%s: %w", redactSetting(setting), err)
	}
	return s, s.Close, false, nil
}

// esdbConnString validates an EventStoreDB / KurrentDB setting and returns
// it with the scheme the v4 client understands.
func esdbConnString(setting string) (string, error) {
	s := strings.TrimSpace(setting)
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return "", fmt.Errorf("ONCELEDGER_EVENT_STORE=%s: want %q or an esdb://host:2113?tls=false (or kurrentdb://…) connection string",
			redactSetting(setting), eventStorePostgres)
	}
	target, known := esdbSchemes[strings.ToLower(scheme)]
	if !known {
		hint := ""
		if strings.HasPrefix(strings.ToLower(scheme), "postgres") {
			hint = fmt.Sprintf(" (for the Postgres event store set it to %q; the database is ONCELEDGER_DATABASE_URL)", eventStorePostgres)
		}
		return "", fmt.Errorf("ONCELEDGER_EVENT_STORE=%s: unsupported scheme %q, want %q or one of esdb://, esdb+discover://, kurrentdb://, kurrentdb+discover://%s",
			redactSetting(setting), scheme, eventStorePostgres, hint)
	}
	if rest == "" || strings.HasPrefix(rest, "?") || strings.HasPrefix(rest, "/") {
		return "", fmt.Errorf("ONCELEDGER_EVENT_STORE=%s: no host in the connection string, e.g. %s://kurrentdb:2113?tls=false",
			redactSetting(setting), scheme)
	}
	return target + "://" + rest, nil
}

// redactSetting hides a password so that configuration errors can name the
// setting: quoted, for an error message.
func redactSetting(setting string) string {
	r, ok := redactedSetting(setting)
	if !ok {
		return r
	}
	return fmt.Sprintf("%q", r)
}

// redactedSetting is the setting with its password hidden, unquoted (a
// structured log quotes values itself when they need it); ok is false when
// the setting could not be parsed and is replaced whole.
func redactedSetting(setting string) (redacted string, ok bool) {
	u, err := url.Parse(strings.TrimSpace(setting))
	if err != nil || u.User == nil {
		if strings.Contains(setting, "@") {
			return "<redacted>", false // unparsable but may hold credentials
		}
		return setting, true
	}
	return u.Redacted(), true
}

// logSetting is the setting for a log attribute: password hidden, not quoted
// (the log handler quotes; quoting here printed event_store="\"postgres\"").
func logSetting(setting string) string {
	r, _ := redactedSetting(setting)
	return r
}
