// Package postgres is the Postgres side of onceledger: the default event
// store (EventStore, with AppendTx/ReadStreamTx so a caller's transaction can
// append), the one-transaction Journal the write protocol of adapters/ingest
// runs on, the webhook inbox (Inbox: the two-phase journal's inbox and the
// workers' queue), the migrations runner over the embedded migrations
// package, and the read-model SQL. It holds SQL and the transaction
// protocol, never ingestion rules: which status a row gets, what a
// redelivery means and when to retry are ingest's. All SQL is hand-written
// pgx v5; row structs stay private to this package.
package postgres
