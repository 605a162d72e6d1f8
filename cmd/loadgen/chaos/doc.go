// Package chaos is onceledger's crash and fault suite. It holds no library
// code: its tests build the real `onceledger` binary, run `onceledger serve`
// as a child process on 127.0.0.1, send it signed `standard` webhooks from
// many goroutines, and break things in the middle:
//
//   - TestCrashKill9Redeliver: serve is killed with SIGKILL during a load and
//     restarted; the sender redelivers everything unacknowledged plus a share
//     of what was acknowledged, as providers do. The ledger must equal the
//     sender's own model and every acknowledged delivery must be applied:
//     a 2xx is a promise that the fact is durable.
//   - TestPostgresOutage: the database (a throwaway cluster of the test's own,
//     never the machine's shared server) is stopped and restarted during a
//     load. Only 503 may be answered while it is down, nothing acknowledged
//     is lost, and the ledger equals the model.
//   - TestProjectorKilledMidCatchUp: a backlog is recorded with projections
//     off, then projecting servers are killed with SIGKILL while they catch
//     up. The read models (ledger_entries, account_balances) must still equal
//     the model exactly: a replayed batch is applied once in effect.
//   - TestThreeInstancesKill9: three serve processes on one database, the
//     sender spreading attempts round-robin across them (duplicates and
//     twins sent to two instances at once included), and kill -9 of the
//     instance running the projectors mid-load. The ledger must equal the
//     model, the projections must move again within 5 s (advisory-lock
//     failover), and only the killed instance may fail a request.
//   - TestSlowAndDisconnectingClients: clients that close mid-body or trickle
//     a body past the server's read timeout leave no inbox row and no event,
//     and the same deliveries sent properly afterwards are first arrivals.
//   - TestJetStreamOnceAcrossKill9: serve publishes to the real nats-server
//     while it is killed with SIGKILL mid-load; the stream then holds every
//     event of GET /v1/events exactly once, under the feed's id.
//   - TestShipOnce: the example consumer docs/examples/shipper, subscribed to
//     onceledger, ships each captured payment once through duplicated and
//     twin Stripe webhooks, a kill -9 of serve mid-delivery, a receiver
//     outage (500, then down) and a replay; per-payment order holds.
//
// The expected ledger comes from cmd/loadgen/internal/model, which re-derives
// docs/reference.md's posting rules independently of domain/: a bug in the
// server's posting rules shows up as a difference instead of being copied into the
// expectation. Requests are signed by cmd/loadgen/internal/sign, written from
// the providers' specifications.
//
// `go test ./cmd/loadgen/chaos/` runs every scenario small (a few hundred
// deliveries); ONCELEDGER_CHAOS_SCALE=N multiplies the load (`make chaos`).
// The tests need the Postgres server of ONCELEDGER_TEST_DATABASE_URL and the
// PostgreSQL server binaries (initdb, pg_ctl; ONCELEDGER_CHAOS_PG_BIN, else
// `pg_config --bindir`, else the newest /usr/lib/postgresql/*/bin). They fail
// loudly when those are missing; -short skips them.
package chaos
