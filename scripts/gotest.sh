#!/usr/bin/env bash
# gotest: `go test` with a progress line per package as it finishes.
#
#   scripts/gotest.sh [GO TEST FLAGS…] -- PACKAGES…
#
# One `go test ./...` prints its packages in the order it lists them, each
# only once every package before it has been printed: the slowest package
# (cmd/onceledger, minutes) held back every line after it, and a newcomer
# watched a silent terminal for long stretches (issue 39). Here each package
# is its own `go test`, TEST_JOBS (default: the number of cores) at a time,
# the packages with the most test code first so the long ones start early;
# a package's result is printed the moment it ends, as
#
#   [12/67] ok   github.com/onceledger/onceledger/adapters/ingest  41.2s
#
# with the whole output of a package that failed. The last line is the
# count, "packages: N passed, N failed", and the exit status is 1 when any
# failed. Builds share Go's cache, so running packages side by side costs
# little more than one `go test` would.
set -uo pipefail

flags=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do flags+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || set -- ./...
GO=${GO:-go}
jobs=${TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}

mapfile -t listed < <($GO list -f '{{.ImportPath}} {{.Dir}} {{len .TestGoFiles}} {{len .XTestGoFiles}}' "$@") || exit 1
ordered=()
while read -r _ pkg; do ordered+=("$pkg"); done < <(
  for row in "${listed[@]}"; do
    read -r pkg dir nt nx <<<"$row"
    if [ "$((nt + nx))" -eq 0 ]; then
      echo "0 $pkg"
    else
      echo "$(cat "$dir"/*_test.go | wc -l) $pkg"
    fi
  done | sort -k1,1nr -k2,2)

logs=$(mktemp -d "${TMPDIR:-/tmp}/gotest.XXXXXX")
trap 'rm -rf "$logs"' EXIT
total=${#ordered[@]}
start=$(date +%s)

# Each job writes its log, then appends one status line to results (a line
# of < PIPE_BUF bytes: appends of concurrent jobs do not interleave).
run_one() {
  local pkg=$1 log
  log="$logs/$(printf '%s' "$pkg" | tr '/' '_').log"
  local t0=$SECONDS
  $GO test "${flags[@]}" "$pkg" >"$log" 2>&1
  local st=$?
  echo "$st $((SECONDS - t0)) $pkg" >>"$logs/results"
  local n
  n=$(wc -l <"$logs/results")
  if [ $st -eq 0 ]; then
    if grep -q '^ok ' "$log"; then
      printf '[%d/%d] ok   %s  %ss\n' "$n" "$total" "$pkg" "$((SECONDS - t0))"
    else
      printf '[%d/%d] --   %s  (no test files)\n' "$n" "$total" "$pkg"
    fi
  else
    printf '[%d/%d] FAIL %s  %ss\n' "$n" "$total" "$pkg" "$((SECONDS - t0))"
    sed 's/^/    /' "$log"
  fi
}
export -f run_one
export GO logs total
export FLAGS_Q
FLAGS_Q=$(printf '%q ' "${flags[@]}")

printf '%s\n' "${ordered[@]}" |
  xargs -P "$jobs" -I{} bash -c 'flags=('"$FLAGS_Q"'); run_one "$1"' _ {}

passed=0 failed=0
while read -r st _ _; do
  if [ "$st" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done <"$logs/results"
missing=$((total - passed - failed))
[ "$missing" -eq 0 ] || { echo "gotest: $missing packages never reported" >&2; failed=$((failed + missing)); }
echo "go test ${flags[*]}: $total packages in $(( $(date +%s) - start ))s"
echo "packages: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
