# onceledger developer commands. `make test` is the test command CI runs.
GO      ?= go
PKGS    ?= ./...
export ONCELEDGER_TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable

.PHONY: test test-short run build vet fmt fuzz-seeds

## test: every test against the real Postgres, with the race detector
test:
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

## test-short: unit tests only (skips the Postgres-backed ones)
test-short:
	$(GO) test -short -count=1 $(PKGS)

## run: start the server on :8080 against the local Postgres (creates the database, applies migrations)
run:
	$(GO) run ./cmd/onceledger serve

build:
	CGO_ENABLED=0 $(GO) build -o bin/onceledger ./cmd/onceledger

vet:
	$(GO) vet $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

# Benchmarks (make bench) and the fault suite (make chaos) live in their own files.
-include bench.mk
-include chaos.mk
