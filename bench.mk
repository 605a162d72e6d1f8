# Benchmarks (included from the Makefile): pgbench ceiling, end-to-end
# webhooks/s with the ledger checked, projection lag. See docs/benchmarks.md.
.PHONY: bench

## bench: pgbench vs onceledger+loadgen on this machine (throwaway databases); see bench/run.sh for settings
bench:
	bench/run.sh

.PHONY: bench-hostile
## bench-hostile: the hostile soak alone (step 8: BENCH_HOSTILE_SECONDS, default 600, of legitimate traffic beside hostile clients on loopback)
bench-hostile:
	bench/run.sh hostile

.PHONY: bench-soak
## bench-soak: the soak alone (step 11: BENCH_SOAK_RATE, default 2,000, signed webhooks/s for BENCH_SOAK_SECONDS, default 240; ledger against the model, RSS per minute, errors)
bench-soak:
	bench/run.sh soak
