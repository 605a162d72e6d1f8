# onceledger developer commands. `make test` is the test command CI runs.
GO      ?= go
PKGS    ?= ./...
# The database: ONCELEDGER_DATABASE_URL (run) and ONCELEDGER_TEST_DATABASE_URL
# (test) when set; else the server on 127.0.0.1:5432 when one answers; else the
# project's own development cluster, which scripts/devdb.sh creates in .devdb/
# (git-ignored) on the first call and reuses afterwards.
DEVDB   := scripts/devdb.sh

.PHONY: test test-fast test-short run demo screenshots build vet fmt fuzz-seeds db-start db-status db-stop db-reset lint-openapi generate

# scripts/gotest.sh runs `go test` per package, TEST_JOBS at a time, and
# prints each package's line the moment it finishes (one `go test ./...`
# holds every line back behind its slowest package).
GOTEST := scripts/gotest.sh

## test: every test against the real Postgres, with the race detector
test:
	@devdb_env=$$($(DEVDB) env test) || exit 1; eval "$$devdb_env"; \
	echo "$(GOTEST) -race -count=1 -timeout 30m -- $(PKGS)"; \
	GO=$(GO) $(GOTEST) -race -count=1 -timeout 30m -- $(PKGS)

## test-fast: every test against the real Postgres, without the race detector (the edit-test loop)
test-fast:
	@devdb_env=$$($(DEVDB) env test) || exit 1; eval "$$devdb_env"; \
	echo "$(GOTEST) -count=1 -timeout 20m -- $(PKGS)"; \
	GO=$(GO) $(GOTEST) -count=1 -timeout 20m -- $(PKGS)

## test-short: unit tests only (skips the Postgres-backed ones)
test-short:
	$(GO) test -short -count=1 $(PKGS)

## run: start the server on :8080 against the local Postgres (creates the database, applies migrations)
# The binary is built, then run: Ctrl-C reaches the server alone, which
# drains and exits 0 (`go run` would turn the signal into exit status 1, and
# make into "Error 1"). A server that refuses to start (a misspelt variable,
# a bad secret) has said why on its last line; make's own "*** Error 1"
# beneath it would read as a build failure, so the recipe ends with the
# server's words and status 0 (the build itself still fails make).
run:
	@devdb_env=$$($(DEVDB) env run) || exit 1; eval "$$devdb_env"; \
	echo "$(GO) build -o bin/onceledger ./cmd/onceledger && bin/onceledger serve"; \
	$(GO) build -o bin/onceledger ./cmd/onceledger || exit 1; \
	bin/onceledger serve || true

## demo: a realistic month across every provider on a database of its own, then the server and its console (scripts/demo.sh)
demo:
	@scripts/demo.sh

## screenshots: the README's console pictures, taken by the console's crawler from make demo's data (needs chromium)
screenshots:
	@scripts/screenshots.sh

## db-start / db-status: the development cluster of .devdb/ (where it lives, the psql command)
db-start:
	@$(DEVDB) start
db-status:
	@$(DEVDB) status
## db-stop: stop the development cluster; db-reset: stop it and delete its data
db-stop:
	@$(DEVDB) stop
db-reset:
	@$(DEVDB) reset

## lint-openapi: redocly lint (recommended rules) of adapters/httpapi/openapi.json; needs npm
REDOCLY_CLI ?= @redocly/cli@2.77.0
lint-openapi:
	npx --yes $(REDOCLY_CLI) lint onceledger

## generate: the Go client of the OpenAPI document (adapters/httpapi/apiclient)
generate:
	$(GO) generate ./adapters/httpapi

build:
	CGO_ENABLED=0 $(GO) build -o bin/onceledger ./cmd/onceledger

vet:
	$(GO) vet $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

# Benchmarks (make bench) and the fault suite (make chaos) live in their own files.
-include bench.mk
-include chaos.mk
