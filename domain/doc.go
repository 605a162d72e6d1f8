// Package domain is the pure heart of onceledger: money, normalized provider
// events, the payment state machine, domain events and their double-entry
// postings. Nothing below this directory performs I/O or imports a driver,
// an HTTP package or a client library; clocks and ids come from the caller.
package domain
