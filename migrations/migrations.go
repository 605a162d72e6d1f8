// Package migrations holds the database schema as numbered goose SQL files
// (NNNNN_name.sql with "-- +goose Up" / "-- +goose Down" sections), embedded
// so the binary carries its schema. adapters/postgres applies them; nothing
// else changes the schema.
package migrations

import "embed"

// FS holds every migration file; goose orders them by their number prefix.
//
//go:embed *.sql
var FS embed.FS
