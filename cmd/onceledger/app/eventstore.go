package app

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/adapters/esdb"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/ingest"
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

// UsesPostgresEventStore tells whether setting selects the Postgres event
// store, so a command that needs Postgres only for events can skip the pool.
func UsesPostgresEventStore(setting string) bool {
	s := strings.TrimSpace(setting)
	return s == "" || strings.EqualFold(s, eventStorePostgres)
}

// EventStore is the configured event store with the journal that records
// deliveries into it, so nobody needs to know which one it is.
type EventStore struct {
	eventstore.Store
	// Journal is the write protocol's storage: one Postgres transaction when
	// the events are in the inbox's database, two phases (inbox row, then the
	// append; a sweeper for the window between) otherwise. Nil when the
	// store was opened without a database (no inbox).
	Journal    ingest.Journal
	IsPostgres bool
	// Close releases what OpenEventStore opened; never nil on success.
	Close func() error
}

// OpenEventStore opens the event store ONCELEDGER_EVENT_STORE selects:
// "postgres" (the default, also for an empty setting) uses pool, which the
// caller keeps owning; an esdb://, esdb+discover://, kurrentdb:// or
// kurrentdb+discover:// connection string dials EventStoreDB / KurrentDB
// (lazily: no connection is made before the first call), with its inbox in
// pool.
func OpenEventStore(setting string, pool *pgxpool.Pool) (EventStore, error) {
	if UsesPostgresEventStore(setting) {
		if pool == nil {
			return EventStore{}, errors.New("ONCELEDGER_EVENT_STORE=postgres needs a database connection (ONCELEDGER_DATABASE_URL)")
		}
		s := postgres.NewEventStore(pool)
		return EventStore{Store: s, Journal: postgres.NewJournal(pool, s), IsPostgres: true, Close: func() error { return nil }}, nil
	}
	conn, err := esdbConnString(setting)
	if err != nil {
		return EventStore{}, err
	}
	s, err := esdb.Dial(conn)
	if err != nil {
		return EventStore{}, fmt.Errorf("ONCELEDGER_EVENT_STORE=%s: %w", RedactSetting(setting), err)
	}
	es := EventStore{Store: s, Close: s.Close}
	if pool != nil {
		es.Journal = ingest.TwoPhase(postgres.NewInbox(pool), s)
	}
	return es, nil
}

// esdbConnString validates an EventStoreDB / KurrentDB setting and returns
// it with the scheme the v4 client understands.
func esdbConnString(setting string) (string, error) {
	s := strings.TrimSpace(setting)
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return "", fmt.Errorf("ONCELEDGER_EVENT_STORE=%s: want %q or an esdb://host:2113?tls=false (or kurrentdb://…) connection string",
			RedactSetting(setting), eventStorePostgres)
	}
	target, known := esdbSchemes[strings.ToLower(scheme)]
	if !known {
		hint := ""
		if strings.HasPrefix(strings.ToLower(scheme), "postgres") {
			hint = fmt.Sprintf(" (for the Postgres event store set it to %q; the database is ONCELEDGER_DATABASE_URL)", eventStorePostgres)
		}
		return "", fmt.Errorf("ONCELEDGER_EVENT_STORE=%s: unsupported scheme %q, want %q or one of esdb://, esdb+discover://, kurrentdb://, kurrentdb+discover://%s",
			RedactSetting(setting), scheme, eventStorePostgres, hint)
	}
	if rest == "" || strings.HasPrefix(rest, "?") || strings.HasPrefix(rest, "/") {
		return "", fmt.Errorf("ONCELEDGER_EVENT_STORE=%s: no host in the connection string, e.g. %s://kurrentdb:2113?tls=false",
			RedactSetting(setting), scheme)
	}
	return target + "://" + rest, nil
}

// RedactSetting hides a password so that configuration errors can be logged.
func RedactSetting(setting string) string {
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

// LogSetting is the setting for a log attribute: password hidden, not quoted
// (the log handler quotes; quoting here printed event_store="\"postgres\"").
func LogSetting(setting string) string {
	r, _ := redactedSetting(setting)
	return r
}
