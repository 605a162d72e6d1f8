#!/usr/bin/env bash
# Machine time per delivery: one `onceledger serve` on a fresh database,
# driven by cmd/loadgen, and what each party spent on it, read from /proc
# (user+system CPU) before and after the load:
#   server   the serve process (every thread)
#   pg       the Postgres backends connected to that database (those that
#            exited during the run are missed: serve's are pooled)
#   loadgen  the generator while it sent (its send_cpu_seconds: without
#            generating and signing every delivery before the clock,
#            --presign; /usr/bin/time's total when it has none)
# plus this database's transactions and rows (pg_stat_database) and the
# server's WAL (pg_stat_wal: cluster-wide, other databases show there too).
# Used for the A/B pairs of docs/benchmarks/history/ (the 2026-12-01 ingestcost run):
#
#   go build -o /tmp/a ./cmd/onceledger   # at the base commit
#   go build -o /tmp/b ./cmd/onceledger   # at the new one
#   for i in 1 2 3; do
#     flock /tmp/bench.lock bench/ingestcost.sh /tmp/a A$i; flock /tmp/bench.lock bench/ingestcost.sh /tmp/b B$i
#   done
#
# Environment: LOADGEN (default $OUT/loadgen, built from this tree), LGARGS (default: saturation,
# --payments $PAYMENTS --concurrency 64 --duplicates 0.2 --reorder 0.1
# --conflicts 0.01; for the open loop at 1,000/s: LGARGS="--payments 0
# --duration 10s --rate 1000 --open-loop --duplicates 0.2 --lag-interval 0"),
# PAYMENTS (6000), PROFILE=seconds (CPU profile of serve to $OUT/cpu_<label>.pprof),
# SPLIT=1 (bench/cpusplit while loadgen runs: the CPU of serve, loadgen, each
# group of Postgres backends and the cluster's own processes, and the wait
# events of the active backends, to $OUT/split_<label>.txt and printed),
# OUT (/tmp/ingestcost-runs), PGHOST/PGPORT/PGUSER (127.0.0.1, 5432, postgres).
set -u
bin=$1 label=$2
: "${PGHOST:=127.0.0.1}" "${PGPORT:=5432}" "${PGUSER:=postgres}" "${PAYMENTS:=6000}" "${OUT:=/tmp/ingestcost-runs}"
: "${LOADGEN:=$OUT/loadgen}"
export PGHOST PGPORT PGUSER
mkdir -p "$OUT"
[[ -x "$LOADGEN" ]] || go build -o "$LOADGEN" ./cmd/loadgen
db="ingestcost_$$_$RANDOM"
port=$((21000 + RANDOM % 10000))
export ONCELEDGER_DATABASE_URL="postgres://${PGUSER}@${PGHOST}:${PGPORT}/${db}?sslmode=disable"
export ONCELEDGER_ADDR="127.0.0.1:$port"
export ONCELEDGER_API_TOKENS="bench-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export ONCELEDGER_STANDARD_SECRETS="whsec_$(head -c 24 /dev/urandom | base64)"
export ONCELEDGER_STRIPE_SECRETS="whsec_bench$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export ONCELEDGER_LOG_LEVEL=warn
createdb "$db"
"$bin" serve --pprof-addr "127.0.0.1:$((port + 1))" >"$OUT/serve_$label.log" 2>&1 &
spid=$!
trap 'kill $spid 2>/dev/null; wait $spid 2>/dev/null; dropdb --if-exists "$db"' EXIT
for _ in $(seq 1 100); do curl -fsS "http://$ONCELEDGER_ADDR/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
sleep 1
cpu() { awk '{print $14+$15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
backends() { psql -Atc "SELECT pid FROM pg_stat_activity WHERE datname = '$db'" postgres; }
dbstat() { psql -Atc "SELECT xact_commit + xact_rollback, tup_inserted, tup_updated FROM pg_stat_database WHERE datname = '$db'" postgres; }
walstat() { psql -Atc "SELECT wal_bytes, wal_fpi FROM pg_stat_wal" postgres; }
declare -A before
for p in $(backends); do before[$p]=$(cpu "$p"); done
s0=$(cpu $spid) d0=$(dbstat) w0=$(walstat)
ppid=""
if [[ -n "${PROFILE:-}" ]]; then
	curl -s "http://127.0.0.1:$((port + 1))/debug/pprof/profile?seconds=$PROFILE" -o "$OUT/cpu_$label.pprof" &
	ppid=$!
fi
spl=""
if [[ -n "${SPLIT:-}" ]]; then
	[[ -x "$OUT/cpusplit" ]] || go build -o "$OUT/cpusplit" ./bench/cpusplit
	"$OUT/cpusplit" -db "$db" -proc serve="$bin serve" -proc loadgen="$LOADGEN" >"$OUT/split_$label.txt" 2>&1 &
	spl=$!
fi
# shellcheck disable=SC2086 # LGARGS is a list of flags
/usr/bin/time -f "%U %S" -o "$OUT/loadgen_$label.time" "$LOADGEN" \
	${LGARGS:---payments $PAYMENTS --concurrency 64 --duplicates 0.2 --reorder 0.1 --conflicts 0.01} \
	--json >"$OUT/loadgen_$label.json" 2>"$OUT/loadgen_$label.err"
[[ -z "$ppid" ]] || wait "$ppid"
if [[ -n "$spl" ]]; then kill -INT "$spl"; wait "$spl"; sed "s/^/$label /" "$OUT/split_$label.txt"; fi
s1=$(cpu $spid) d1=$(dbstat) w1=$(walstat)
pg=0
for p in $(backends); do pg=$((pg + $(cpu "$p") - ${before[$p]:-0})); done
n=$(jq '[.outcomes.accepted, .outcomes.duplicate, .outcomes.ignored] | add' "$OUT/loadgen_$label.json")
awk -v l="$label" -v n="$n" -v tk="$(getconf CLK_TCK)" -v s=$((s1 - s0)) -v pg="$pg" \
	-v lg="$(jq -r '.send_cpu_seconds // empty' "$OUT/loadgen_$label.json" 2>/dev/null | grep . || awk '{print $1 + $2}' "$OUT/loadgen_$label.time")" \
	-v rate="$(jq '.deliveries_per_second | floor' "$OUT/loadgen_$label.json")" \
	-v p99="$(jq '.latency_ms.p99' "$OUT/loadgen_$label.json")" -v verdict="$(jq -r .verdict "$OUT/loadgen_$label.json")" \
	-v d0="$d0" -v d1="$d1" -v w0="$w0" -v w1="$w1" -v ld="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN {
	split(d0, a, "|"); split(d1, b, "|"); split(w0, x, "|"); split(w1, y, "|")
	printf "%s: %d deliveries %d/s %s p99 %.1f ms | CPU ms/delivery: server %.3f  postgres %.3f  loadgen %.3f | per delivery: xact %.3f  rows ins %.2f upd %.2f  WAL %.2f kB (%d fpi) | load %s\n",
		l, n, rate, verdict, p99, s * 1000 / tk / n, pg * 1000 / tk / n, lg * 1000 / n,
		(b[1] - a[1]) / n, (b[2] - a[2]) / n, (b[3] - a[3]) / n, (y[1] - x[1]) / 1e3 / n, y[2] - x[2], ld }'
