# Benchmarks (included from the Makefile): pgbench ceiling, end-to-end
# webhooks/s with the ledger checked, projection lag. See docs/benchmarks.md.
.PHONY: bench

## bench: pgbench vs onceledger+loadgen on this machine (throwaway databases); see bench/run.sh for settings
bench:
	bench/run.sh
