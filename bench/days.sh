# Step 9 of bench/run.sh (sourced by it: its helpers and $work, $tag,
# $status, $server_pid): provider balances and the day's close (issue 35).
#
#   9a. An Alipay account bill of BENCH_DAYS_LINES withdrawals (bench/settlegen
#       -format alipay-account: every line records a payout and states the
#       running balance 账户余额, so every line is an assertion, each agreeing
#       with the ledger), imported with `onceledger settle import` into a
#       fresh database with `onceledger serve` on it: the time from the
#       import's start until every projection has caught up (/v1/projections
#       all at lag 0, polled every 100 ms), per line. The reference is the
#       same bill imported the same way by the revision before balance
#       assertions existed (BENCH_DAYS_BEFORE, default the parent of 4182522,
#       "assertion API"): today's import of the same bill without an
#       assertion per line. The two alternate (before, after, before, after),
#       each on its own fresh database; the ratio is after/before of the
#       mean per-line time (goal <= 1.3). The import command's own time is
#       printed beside it.
#   9b. GET /v1/provider-days for a year of days: a database seeded with
#       BENCH_DAYS_EVENTS real domain events (bench/seed --span 365 days, so
#       that the days have facts all year) and rebuilt once (`onceledger
#       rebuild --all`, unmeasured: it builds provider_days), serve on it,
#       then BENCH_DAYS_REQUESTS requests for one provider's year
#       (2026-01-01 to 2026-12-31) and for every provider's: the median and
#       the worst, against the 300 ms goal.
#
# bench/run.sh days    this step only

DAYS_LINES=${BENCH_DAYS_LINES:-100000}
DAYS_EVENTS=${BENCH_DAYS_EVENTS:-1000000}
DAYS_REQUESTS=${BENCH_DAYS_REQUESTS:-11}
DAYS_BEFORE=${BENCH_DAYS_BEFORE:-4182522^}
dy_token="bench-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
: >"$work/days_summary.txt"

# dy_serve BIN DB: serve BIN on DB (migrated by BIN) at $dy_addr.
dy_serve() {
	dy_addr="127.0.0.1:$(free_port)"
	ONCELEDGER_DATABASE_URL="$(pgurl "$2")" ONCELEDGER_ADDR="$dy_addr" ONCELEDGER_API_TOKENS="$dy_token" \
		ONCELEDGER_LOG_LEVEL=warn "$1" serve >"$work/dy_serve.log" 2>&1 &
	server_pid=$!
	wait_ready "$dy_addr" "$server_pid" "$work/dy_serve.log"
}
dy_stop() {
	kill "$server_pid" 2>/dev/null || true
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
}

# dy_caught_up: until every projection of the server at $dy_addr is at lag 0.
dy_caught_up() {
	local body
	while :; do
		body="$(curl -fsS -H "Authorization: Bearer $dy_token" "http://$dy_addr/v1/projections" 2>/dev/null)" &&
			jq -e '[.projections[] | select(.lag != 0 or .lag_capped == true)] | length == 0' >/dev/null <<<"$body" && return 0
		sleep 0.1
	done
}

# dy_import BIN LABEL: a fresh database, serve BIN on it, the bill imported
# by BIN; appends "LABEL import_seconds total_seconds" to days_import.txt.
dy_import() {
	local db="onceledger_bench_days_${2}_${tag}" t0 t1 t2 rc=0
	createdb "$db"
	ONCELEDGER_DATABASE_URL="$(pgurl "$db")" ONCELEDGER_LOG_LEVEL=warn "$1" migrate >/dev/null
	dy_serve "$1" "$db"
	t0=$(date +%s.%N)
	ONCELEDGER_DATABASE_URL="$(pgurl "$db")" ONCELEDGER_LOG_LEVEL=warn \
		"$1" settle import --provider alipay "$work/days_bill.csv" >"$work/days_$2.txt" 2>&1 || rc=$?
	t1=$(date +%s.%N)
	dy_caught_up
	t2=$(date +%s.%N)
	dy_stop
	if ((rc != 0)); then cat "$work/days_$2.txt" >&2; status=1; fi
	# What the import stated (none before assertions existed).
	dy_stated="no assertions table"
	if [[ "$(psql -Atc "SELECT to_regclass('balance_assertions') IS NOT NULL" "$db")" == t ]]; then
		dy_stated="$(psql -Atc "SELECT count(*) || ' assertions, ' || count(*) FILTER (WHERE ledger <> stated) || ' differing' FROM balance_assertions" "$db")"
	fi
	echo "$2 $(awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN {printf "%.3f %.3f", b - a, c - a}')" >>"$work/days_import.txt"
	echo "$2: $(grep -m1 'lines read' "$work/days_$2.txt" || echo "exit $rc"); import $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s, projected $(awk -v a="$t0" -v c="$t2" 'BEGIN {printf "%.1f", c - a}') s after its start; $dy_stated"
	if [[ "${BENCH_KEEP:-0}" != 1 ]]; then dropdb --if-exists "$db"; fi
}

echo "== 9a. an Alipay account bill of $DAYS_LINES lines (an assertion per line): this build against $DAYS_BEFORE, alternating"
"$work/settlegen" -format alipay-account -lines "$DAYS_LINES" -run "dy$tag" >"$work/days_bill.csv"
echo "bill: $(du -h "$work/days_bill.csv" | cut -f1); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
mkdir -p "$work/before_days"
git archive "$DAYS_BEFORE" | tar -x -C "$work/before_days"
(cd "$work/before_days" && go build -o "$work/onceledger_before_days" ./cmd/onceledger)
: >"$work/days_import.txt"
for pair in 1 2; do
	dy_import "$work/onceledger_before_days" "before$pair"
	dy_import "$work/onceledger" "after$pair"
done
awk -v n="$DAYS_LINES" -v rev="$DAYS_BEFORE" -v la="$(cut -d' ' -f1-3 /proc/loadavg)" '
	{ side = ($1 ~ /^before/) ? "b" : "a"; imp[side] += $2; tot[side] += $3; k[side]++ }
	END { if (k["b"] && k["a"]) printf "days: Alipay account bill of %d lines (an assertion per line), import until projected: %.1f us/line before (%s), %.1f us/line after: x%.2f (goal <= 1.3); the import command alone: %.1f -> %.1f us/line (x%.2f); load %s\n",
		n, 1e6 * tot["b"] / k["b"] / n, rev, 1e6 * tot["a"] / k["a"] / n, (tot["a"] / k["a"]) / (tot["b"] / k["b"]),
		1e6 * imp["b"] / k["b"] / n, 1e6 * imp["a"] / k["a"] / n, (imp["a"] / k["a"]) / (imp["b"] / k["b"]), la }' \
	"$work/days_import.txt" | tee -a "$work/days_summary.txt"

echo "== 9b. GET /v1/provider-days for a year of days: $DAYS_EVENTS events seeded over 2026, rebuilt once"
dy_db="onceledger_bench_days_year_${tag}"
createdb "$dy_db"
ONCELEDGER_DATABASE_URL="$(pgurl "$dy_db")" ONCELEDGER_LOG_LEVEL=warn "$work/onceledger" migrate >/dev/null
"$work/seed" --database-url "$(pgurl "$dy_db")" --events "$DAYS_EVENTS" --span 8760h | tee "$work/days_seed.txt"
psql -q -c VACUUM "$dy_db"
# As step 4: the live checkpoints at the head, so that the rebuild (the
# live tables empty: differences, exit non-zero, expected) swaps its tables in.
checkpoints_at_head "$dy_db"
ONCELEDGER_DATABASE_URL="$(pgurl "$dy_db")" ONCELEDGER_LOG_LEVEL=warn "$work/onceledger" rebuild --all >"$work/days_rebuild.txt" 2>&1 || true
grep -q '^swap: rebuilt tables are live' "$work/days_rebuild.txt" || { cat "$work/days_rebuild.txt" >&2; echo "bench: the rebuild did not swap" >&2; status=1; }
echo "provider_days: $(psql -Atc "SELECT count(*) || ' rows, ' || count(DISTINCT provider) || ' providers, ' || min(day) || ' to ' || max(day) FROM provider_days" "$dy_db")"
dy_serve "$work/onceledger" "$dy_db"
# dy_times QUERY: DAYS_REQUESTS requests' times in ms (the first one too:
# a cold read is what an accountant opening the page meets), sorted.
dy_times() {
	for _ in $(seq 1 "$DAYS_REQUESTS"); do
		curl -fsS -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $dy_token" "http://$dy_addr/v1/provider-days?$1" ||
			{ echo "bench: GET /v1/provider-days?$1 failed" >&2; status=1; }
	done | awk '{printf "%.1f\n", $1 * 1000}' | sort -n
}
for q in "provider=stripe&from=2026-01-01&to=2026-12-31" "from=2026-01-01&to=2026-12-31"; do
	dy_times "$q" >"$work/days_times.txt"
	awk -v q="$q" -v n="$DAYS_EVENTS" -v la="$(cut -d' ' -f1-3 /proc/loadavg)" '{ t[NR] = $1 }
		END { if (NR) printf "days: GET /v1/provider-days?%s on %d events: median %.1f ms, worst %.1f ms of %d requests (goal < 300 ms); load %s\n",
			q, n, t[int((NR + 1) / 2)], t[NR], NR, la }' "$work/days_times.txt" | tee -a "$work/days_summary.txt"
done
dy_stop
if [[ "${BENCH_KEEP:-0}" != 1 ]]; then dropdb --if-exists "$dy_db"; fi
