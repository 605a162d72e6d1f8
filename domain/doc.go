// Package domain is the pure heart of onceledger: money (money), the chart
// of accounts and the balance rule (ledger), normalized provider deliveries
// (delivery), settlement-report lines (settlement), the payment and payout
// aggregates with their domain events, codec and double-entry postings
// (payment), and accounting periods (period). Nothing below this directory
// performs I/O or imports a driver, an HTTP package or a client library;
// clocks and ids come from the caller.
package domain
