// Command archcheck holds the repository to its architecture rules, so that
// a branch cannot grow an inverted arrow or a god function back without a
// red test. It owns four rules:
//
//   - domain/... imports no infrastructure: only the standard library (less
//     net/http, database/sql and the like), other domain packages and an
//     explicit allow-list (github.com/google/uuid);
//   - no storage adapter (adapters/postgres/..., adapters/esdb/...,
//     adapters/eventstore/...) imports a front end (adapters/console/...,
//     adapters/httpapi/...), directly or through other packages of the
//     module;
//   - the front ends (adapters/httpapi/..., adapters/console/...) import no
//     storage adapter (adapters/postgres/..., adapters/esdb/...), directly
//     or transitively;
//   - no hand-written function, test or function literal is over 120 lines,
//     counted from its func keyword to its closing brace (generated files,
//     *.gen.go or marked "Code generated ... DO NOT EDIT.", aside).
//
// The import rules read the graph of `go list -deps -json ./...` (non-test
// files); the length rule parses every .go file git tracks. Each failure
// names what to cut: the arrow (importer → imported, with the chain that
// reaches it when it is transitive) or the function (file:line, name,
// length). The tests of this package run the rules over the repository
// (they are part of `make test`) and over synthetic violations, so that
// the checker itself is tested. Run by hand:
//
//	go run ./cmd/archcheck
//
// Exit status: 0 every rule holds, 1 a rule is broken, 2 could not check.
package main
