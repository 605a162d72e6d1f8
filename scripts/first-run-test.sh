#!/usr/bin/env bash
# first-run-test: what a newcomer does on a machine with Go and the Postgres
# binaries but no database server, from a fresh clone, checked.
#
#   git clone → make run (no ONCELEDGER_DATABASE_URL, nothing on the default
#   address: the development cluster of scripts/devdb.sh is created) → ready
#   within 30 s → `onceledger sample` twice (accepted, then duplicate) → the
#   balances over /v1 → the start-up log lines the README shows are the
#   ones this run printed → make test-short → make db-stop → clean up.
#
# The full `make test` of the clone is left out: it takes many minutes and CI
# has just run it on this tree. The clone is of the committed HEAD of this
# repository (FIRST_RUN_REPO overrides). "The default address" is pointed at
# an unused port, so the test does not depend on whether this machine runs a
# server on 5432; the server listens on a free port instead of 8080.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
repo=${FIRST_RUN_REPO:-$here}

say() { printf 'first-run: %s\n' "$*" >&2; }
fail() { say "FAIL: $*"; exit 1; }
answers() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
unused_port() {
  local p
  for p in $(seq "$1" "$(($1 + 200))"); do
    answers 127.0.0.1 "$p" || { echo "$p"; return 0; }
  done
  fail "no unused port from $1"
}

work=$(mktemp -d "${TMPDIR:-/tmp}/onceledger-first-run.XXXXXX")
clone=$work/onceledger
server_pid=""
cleanup() {
  local rc=$?
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    # make run is its own process group (setsid): `go run` does not pass
    # SIGTERM on to the server it started, so signal the whole group.
    kill -TERM -- "-$server_pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 -- "-$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$server_pid" 2>/dev/null || true
  fi
  if [ -x "$clone/scripts/devdb.sh" ]; then
    (cd "$clone" && scripts/devdb.sh reset) || true
  fi
  if [ $rc -ne 0 ] && [ -f "$work/serve.log" ]; then
    say "server log:"; sed 's/^/  /' "$work/serve.log" >&2
  fi
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT

unset ONCELEDGER_DATABASE_URL ONCELEDGER_TEST_DATABASE_URL ONCELEDGER_DEVDB_DIR
export ONCELEDGER_DEVDB_DEFAULT_ADDR=127.0.0.1:$(unused_port 15432)
http_port=$(unused_port 18080)
base=http://127.0.0.1:$http_port
# The README's settings.
export ONCELEDGER_STANDARD_SECRETS=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
export ONCELEDGER_API_TOKENS=tok
say "cloning $repo into $clone (default address $ONCELEDGER_DEVDB_DEFAULT_ADDR, nothing there)"
git clone -q "$repo" "$clone"
cd "$clone"

say "make run"
started=$(date +%s)
ONCELEDGER_ADDR=127.0.0.1:$http_port setsid make run >"$work/serve.log" 2>&1 &
server_pid=$!
# make run builds the binary first: how long that takes is the machine's
# (a cold build cache, a loaded CI host); the 30 s are the server's.
while [ ! -x "$clone/bin/onceledger" ] && [ $(($(date +%s) - started)) -lt 600 ]; do
  kill -0 "$server_pid" 2>/dev/null || fail "make run exited"
  sleep 0.5
done
[ -x "$clone/bin/onceledger" ] || fail "make run: not built within 600 s"
say "built after $(($(date +%s) - started)) s"
started=$(date +%s)
ready=""
while [ $(($(date +%s) - started)) -lt 30 ]; do
  kill -0 "$server_pid" 2>/dev/null || fail "make run exited"
  if curl -sf "$base/readyz" >/dev/null 2>&1; then ready=1; break; fi
  sleep 0.2
done
[ -n "$ready" ] || fail "make run: not ready within 30 s"
say "ready after $(($(date +%s) - started)) s"
grep -q "devdb:   connect  psql 'postgres://postgres@127.0.0.1:" "$work/serve.log" ||
  fail "make run did not print the development cluster's psql command"
grep -q 'event_store=postgres ' "$work/serve.log" || fail "the start-up log does not say event_store=postgres"

say "onceledger sample, twice"
first=$(go run ./cmd/onceledger sample --url "$base")
second=$(go run ./cmd/onceledger sample --url "$base")
say "  $first"
say "  $second"
[[ $first == *'200 OK {"status":"accepted"}'* ]] || fail "first sample: $first"
[[ $second == *'200 OK {"status":"duplicate"}'* ]] || fail "second sample: $second"

say "curl the balances"
balances=""
for _ in $(seq 1 100); do # the projectors run behind the webhook's answer
  balances=$(curl -sf -H 'Authorization: Bearer tok' "$base/v1/balances" || true)
  [[ $balances == *'"revenue:sales","currency":"USD","balance":-1000'* ]] && break
  sleep 0.1
done
say "  $balances"
[[ $balances == *'{"account":"provider:standard:balance","currency":"USD","balance":970,"balance_decimal":"9.70"}'* ]] ||
  fail "balances: $balances"
[[ $balances == *'{"account":"revenue:sales","currency":"USD","balance":-1000,"balance_decimal":"-10.00"}'* ]] ||
  fail "balances: $balances"

say "the README's first-run log is this run's"
# The README's first ```text block is the start-up log of `make run`. Its
# stable parts must be this run's, line for line (in any order: the
# projectors start concurrently): what varies between machines and runs
# (times, the clone's path, ports and addresses, the Postgres version and
# directory) is replaced by placeholders on both sides. Dropped: the line
# only root gets (the cluster moved under /var/tmp), and the "not ready"
# answers to this script's own /readyz polling.
normalize() {
  sed -E \
    -e '/cannot reach .*: the cluster lives in/d' \
    -e '/msg="not ready"/d' \
    -e "s#$clone#/home/you/onceledger#g" \
    -e 's#/var/tmp/onceledger-devdb-[0-9]+#/home/you/onceledger/.devdb#g' \
    -e 's#time=[^ ]+#time=…#' \
    -e 's#127\.0\.0\.1:[0-9]+#127.0.0.1:PORT#g' \
    -e 's#addr=[^ ]+#addr=ADDR#' \
    -e 's#Postgres [0-9.]+ at#Postgres VERSION at#' \
    -e 's#\(/[^)]*/bin\)#(BINDIR)#' | LC_ALL=C sort
}
shown=$(awk '/^## First run/{on=1} on && /^```text$/{inblock=1; next} inblock && /^```$/{exit} inblock' README.md | normalize)
printed=$(sed -n '/msg=webhook/q;p' "$work/serve.log" | normalize)
[ -n "$shown" ] || fail "README.md: no \`\`\`text block under \"## First run\""
if [ "$shown" != "$printed" ]; then
  say "README.md shows (normalized):"; printf '%s\n' "$shown" | sed 's/^/  /' >&2
  say "this run printed (normalized):"; printf '%s\n' "$printed" | sed 's/^/  /' >&2
  diff <(printf '%s\n' "$shown") <(printf '%s\n' "$printed") >&2 || true
  fail "README.md's first-run log is not what make run prints: update it from this run"
fi

say "make test-short"
make test-short >"$work/test-short.log" 2>&1 || { cat "$work/test-short.log" >&2; fail "make test-short"; }

say "make demo (small): every provider's webhooks, the sample reports, a closed period"
demo_port=$(unused_port 19080)
ONCELEDGER_ADDR=127.0.0.1:$demo_port DEMO_PAYMENTS=10 DEMO_EXIT=1 make demo >"$work/demo.log" 2>&1 ||
  { cat "$work/demo.log" >&2; fail "make demo"; }
grep -q "^demo: ready" "$work/demo.log" || { cat "$work/demo.log" >&2; fail "make demo: not ready"; }
grep -q "refused\|could not be closed" "$work/demo.log" && { cat "$work/demo.log" >&2; fail "make demo: an upload or the close was refused"; }
grep -qE "demo:   [1-9][0-9]* open reconciliation items" "$work/demo.log" || { cat "$work/demo.log" >&2; fail "make demo: no item"; }

say "a misspelt variable under make run ends with the server's message"
# The server names the variable meant; make must not add its own
# "*** Error 1" beneath it (it read as a failed build).
typo=STANDRAD # spelt in two parts: the repository names no variable onceledger does not read
misspelt=$(env "ONCELEDGER_${typo}_SECRETS=x" ONCELEDGER_ADDR=127.0.0.1:0 make run 2>&1 | tail -n 1)
say "  $misspelt"
[[ $misspelt == *"did you mean ONCELEDGER_STANDARD_SECRETS?"* ]] || fail "make run with a misspelt variable ended with: $misspelt"

say "make db-stop"
kill -TERM -- "-$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=""
make db-stop 2>&1 | grep -q "stopped the development cluster" || fail "make db-stop did not stop the cluster"
say "OK"
