// Package postgres is the Postgres side of onceledger's write path: the
// default event store (EventStore, with AppendTx/ReadStreamTx so a caller's
// transaction can append), the one-transaction Journal the write protocol of
// adapters/ingest runs on, the webhook inbox (Inbox: the two-phase journal's
// inbox and the workers' queue, with the redrive selection), the erasure of
// stored raw bodies (Eraser), the pool of marked read-model connections the
// feed horizon passes (NewReadModelPool), the rebuild's progress metrics and
// the migrations runner over the embedded migrations package. It holds SQL
// and the transaction protocol, never ingestion rules: which status a row
// gets, what a redelivery means and when to retry are ingest's. The
// read-model SQL is in package readmodel, the console's sessions in
// sessionstore. All SQL is hand-written pgx v5; row structs stay private to
// this package.
package postgres
