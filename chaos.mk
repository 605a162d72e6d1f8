# The crash/fault suite at scale (included from the Makefile). `make test`
# already runs it small; this runs it CHAOS_SCALE times bigger, verbosely:
# kill -9 of serve under load, three instances on one database with the
# projecting one killed -9 mid-load (failover within 5 s), a Postgres outage
# (a throwaway cluster of its own, never the shared server), projectors
# killed mid catch-up, slow and disconnecting clients. Needs the PostgreSQL server binaries (initdb, pg_ctl).
GO          ?= go
CHAOS_SCALE ?= 10

.PHONY: chaos

## chaos: the crash/fault suite, CHAOS_SCALE (default 10) times the load of `make test`
chaos:
	ONCELEDGER_CHAOS_SCALE=$(CHAOS_SCALE) $(GO) test -count=1 -v -timeout 30m ./cmd/loadgen/chaos/
