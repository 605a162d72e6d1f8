// Package postgres is the Postgres side of onceledger: the default event
// store (EventStore, with AppendTx/ReadStreamTx so a caller's transaction can
// append), the migrations runner over the embedded migrations package, the
// webhook inbox recorder. The read-model SQL is in package readmodel. All
// SQL is hand-written pgx v5; row structs stay private to this package.
package postgres
