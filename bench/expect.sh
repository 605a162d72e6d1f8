# Step 10 of bench/run.sh (sourced by it: its helpers and $work, $CONC,
# $PAYMENTS, $status): expected payments and asking the provider (issue 36).
#
#   10a. The schedule's cost: the ingest maximum (step 2's closed-loop
#       loadgen run: BENCH_EXPECT_PAYMENTS payments, $CONC senders, 20%
#       redeliveries) three times on a database without expectations and
#       three times on one holding BENCH_EXPECT_OUTSTANDING outstanding
#       expected payments, alternating (without, with, …) so that both
#       databases grow alike, serve restarted before each run. The
#       expectations are registered through POST /v1/expected-payments
#       (bench/expectsweep register: the real path, one stream each, folded
#       by the process manager) with ONCELEDGER_QUERY_AFTER=24h: next_query_at
#       is a day ahead, so the schedule polls (its claim every 5 s, an index
#       read of expected_payments_query_idx) and asks nothing. Both servers
#       run the same configuration, the querier included: the Stripe asker is
#       configured against the Stripe double (bench/expectsweep doubles, a
#       real HTTP server), so the only difference is the outstanding rows (the
#       schedule's reads, and the process manager's lookup of each capture's
#       references among them). Printed: each run, the median and spread of
#       each side, the ratio of the medians (goal: the drop within the
#       three-run spread, <= 10%), the claim's plan on the seeded table
#       (bench/expectsweep explain: an index scan, no sequential scan), and
#       the index and sequential scans of expected_payments during the runs
#       with them (pg_stat_user_indexes / _tables), and the double's
#       questions (0: nothing was due).
#   10b. The sweep: BENCH_EXPECT_SWEEP expected payments registered (the
#       double knows each as a succeeded PaymentIntent of the same amount),
#       then made due at once (the bench sets next_query_at = now() in the
#       schedule table with serve stopped: the state a backlog leaves), and
#       serve started with ONCELEDGER_QUERY_RATE=BENCH_EXPECT_RATE: the
#       questions per second the double received against the set rate, and
#       the time from the first question until every one of them is paid
#       (asked, recorded through the gate, paid by the process manager),
#       against the ideal N / rate.
#
# bench/run.sh expect    this step only
#   BENCH_EXPECT_OUTSTANDING=100000  outstanding expectations of 10a
#   BENCH_EXPECT_PAYMENTS=$BENCH_PAYMENTS  payments of each 10a run (step 2's)
#   BENCH_EXPECT_RUNS=3              runs of each side in 10a (odd: the median is a run)
#   BENCH_EXPECT_SWEEP=10000         due expectations of 10b
#   BENCH_EXPECT_RATE=200            ONCELEDGER_QUERY_RATE of 10b (questions/s)

EX_OUT=${BENCH_EXPECT_OUTSTANDING:-100000}
EX_PAYMENTS=${BENCH_EXPECT_PAYMENTS:-$PAYMENTS}
EX_RUNS=${BENCH_EXPECT_RUNS:-3}
EX_SWEEP=${BENCH_EXPECT_SWEEP:-10000}
EX_RATE=${BENCH_EXPECT_RATE:-200}
go build -o "$work/expectsweep" ./bench/expectsweep
ex_token="bench-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
ex_writer="bench-writer-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
ex_std="whsec_$(head -c 24 /dev/urandom | base64)"
ex_stripe="whsec_bench$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
ex_key="sk_test_bench$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')"
ex_none="onceledger_bench_ex_none_${tag}"
ex_with="onceledger_bench_ex_with_${tag}"
ex_sweep="onceledger_bench_ex_sweep_${tag}"
doubles_pid=""
: >"$work/expect_summary.txt"

ex_cleanup() {
	if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; server_pid=""; fi
	if [[ -n "$doubles_pid" ]]; then kill "$doubles_pid" 2>/dev/null || true; wait "$doubles_pid" 2>/dev/null || true; doubles_pid=""; fi
	if [[ "${BENCH_KEEP:-0}" != 1 ]]; then
		for d in "$ex_none" "$ex_with" "$ex_sweep"; do dropdb --if-exists "$d" 2>/dev/null || true; done
	fi
}
trap 'ex_cleanup; cleanup' EXIT

# The Stripe double: every PaymentIntent of the sweep, succeeded.
doubles_addr="127.0.0.1:$(free_port)"
"$work/expectsweep" doubles --addr "$doubles_addr" --key "$ex_key" --prefix pi_sweep_ --n "$EX_SWEEP" --amount 1000 \
	>"$work/doubles.log" 2>&1 &
doubles_pid=$!
for _ in $(seq 1 100); do curl -fsS "http://${doubles_addr}/_bench/stats" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS "http://${doubles_addr}/_bench/stats" >/dev/null || { cat "$work/doubles.log" >&2; exit 1; }

# ex_serve DB NAME [VAR=value…]: serve on DB (created when missing), the
# Stripe asker configured against the double.
ex_serve() {
	local db=$1 name=$2
	shift 2
	ex_addr="127.0.0.1:$(free_port)"
	psql -Atc "SELECT 1 FROM pg_database WHERE datname = '$db'" postgres | grep -q 1 || createdb "$db"
	env ONCELEDGER_DATABASE_URL="$(pgurl "$db")" ONCELEDGER_ADDR="$ex_addr" ONCELEDGER_API_TOKENS="$ex_token" \
		ONCELEDGER_WRITER_TOKENS="bench=$ex_writer" ONCELEDGER_STANDARD_SECRETS="$ex_std" ONCELEDGER_STRIPE_SECRETS="$ex_stripe" \
		ONCELEDGER_STRIPE_API_KEY="$ex_key" ONCELEDGER_STRIPE_API_BASE="http://${doubles_addr}" \
		ONCELEDGER_QUERY_AFTER=24h ONCELEDGER_LOG_LEVEL=warn "$@" \
		"$work/onceledger" serve >"$work/ex_${name}_serve.log" 2>&1 &
	server_pid=$!
	wait_ready "$ex_addr" "$server_pid" "$work/ex_${name}_serve.log"
	# The querier runs when an asker is configured (and QUERY_AFTER > 0):
	# its metric then carries the provider.
	curl -fsS "http://${ex_addr}/metrics" | grep -q 'onceledger_provider_queries_total{.*provider="stripe"' \
		|| { cat "$work/ex_${name}_serve.log" >&2; echo "bench: the Stripe asker is not configured" >&2; exit 1; }
}
ex_stop() {
	kill "$server_pid" 2>/dev/null || true
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
}

# ex_seed DB N PREFIX: registers N expectations through serve and waits
# until the process manager has folded them all into expected_payments.
ex_seed() {
	local db=$1 n=$2 prefix=$3 have=0
	ex_serve "$db" "seed_$prefix"
	"$work/expectsweep" register --url "http://${ex_addr}" --token "$ex_writer" --prefix "$prefix" --n "$n" \
		--amount 1000 --concurrency "$CONC" >"$work/ex_register_$prefix.json" || status=$?
	for _ in $(seq 1 $((n / 50 + 600))); do
		have="$(psql -Atc "SELECT count(*) FROM expected_payments WHERE reference LIKE '${prefix}%'" "$db")"
		[[ "$have" -ge "$n" ]] && break
		sleep 0.5
	done
	ex_stop
	jq -r --arg db "$db" --arg have "$have" '"registered \(.registered) expected payments in \(.seconds*10|round/10) s (\(.per_second|floor)/s through POST /v1/expected-payments, \(.failures) failures); \($have) folded into expected_payments"' \
		"$work/ex_register_$prefix.json"
	[[ "$have" -ge "$n" ]] || { echo "bench: only $have of $n expectations folded" >&2; exit 1; }
}

# scans DB: the index scans of expected_payments_query_idx and the
# sequential scans of expected_payments so far.
scans() {
	psql -Atc "SELECT coalesce((SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 'expected_payments_query_idx'), 0) || ' ' ||
		coalesce((SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'expected_payments'), 0)" "$1"
}

echo "== 10a. the schedule's cost: ingest maximum without and with $EX_OUT outstanding expected payments ($EX_PAYMENTS payments, $CONC senders, $EX_RUNS runs each)"
uptime
createdb "$ex_none"
ex_seed "$ex_with" "$EX_OUT" pi_out_
# The state a running system settles into (autovacuum would get there):
# not a vacuum of the seeded rows landing in the first runs with them.
psql -Atc "VACUUM ANALYZE" "$ex_with" >/dev/null
psql -Atc "VACUUM ANALYZE" "$ex_none" >/dev/null
echo "-- the claim's plan with $EX_OUT outstanding (bench/expectsweep explain):"
"$work/expectsweep" explain --db "$(pgurl "$ex_with")" | tee "$work/ex_plan.txt" | sed 's/^/   /' || status=$?
curl -fsS -X POST "http://${doubles_addr}/_bench/reset" >/dev/null
scans_before="$(scans "$ex_with")"
: >"$work/ex_none.txt"
: >"$work/ex_with.txt"
for i in $(seq 1 "$EX_RUNS"); do
	for side in none with; do
		db=$ex_none
		[[ "$side" == with ]] && db=$ex_with
		ex_serve "$db" "${side}_$i"
		"$work/loadgen" --url "http://${ex_addr}" --token "$ex_token" --standard-secret "$ex_std" --stripe-secret "$ex_stripe" \
			--payments "$EX_PAYMENTS" --concurrency "$CONC" --duplicates 0.2 --reorder 0.1 --conflicts 0.01 \
			--json >"$work/ex_${side}_$i.json" || status=$?
		ex_stop
		jq -r '.deliveries_per_second' "$work/ex_${side}_$i.json" >>"$work/ex_${side}.txt"
		jq -r --arg s "$side" --arg i "$i" '"run \($i) \(if $s == "with" then "with   " else "without" end): \(.deliveries_per_second|floor) webhooks/s  verdict: \(.verdict)  p99 \(.latency_ms.p99*10|round/10) ms"' \
			"$work/ex_${side}_$i.json"
	done
done
scans_after="$(scans "$ex_with")"
asked="$(curl -fsS "http://${doubles_addr}/_bench/stats" | jq .asks)"
{
	# Medians and spreads of each side; then the runs paired as they ran
	# (each run with them against the run without them just before it):
	# the machine drifts over a run of minutes (autovacuum, checkpoints,
	# page cache), and a pair shares its moment, so the paired ratios'
	# median is the figure the drift moves least.
	awk -v out="$EX_OUT" -v sb="$scans_before" -v sa="$scans_after" -v asked="$asked" '
		FNR == 1 { f++ }
		f == 1 { n0++; a0[n0] = $1 } f == 2 { n1++; a1[n1] = $1 }
		f == 3 { n2++; p0[n2] = $1 } f == 4 { n3++; r[n3] = $1 / p0[n3] }
		function median(a, n,   i, j, t) {
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		END {
			m0 = median(a0, n0); s0 = a0[n0] - a0[1]; m1 = median(a1, n1); s1 = a1[n1] - a1[1]
			drop = (1 - m1 / m0) * 100
			runs0 = ""; for (i = 1; i <= n0; i++) runs0 = runs0 sprintf(" %.0f", a0[i])
			runs1 = ""; for (i = 1; i <= n1; i++) runs1 = runs1 sprintf(" %.0f", a1[i])
			printf "ingest maximum without expectations: median %.0f webhooks/s, spread %.0f (%.1f%%; runs%s)\n", m0, s0, s0 / m0 * 100, runs0
			printf "ingest maximum with %d outstanding: median %.0f webhooks/s, spread %.0f (%.1f%%; runs%s)\n", out, m1, s1, s1 / m1 * 100, runs1
			d = m0 - m1; if (d < 0) d = -d
			sp = s0 > s1 ? s0 : s1
			printf "ratio of the medians with/without %.3f: drop %.1f%% (goal: within the spread, %.0f webhooks/s, and <= 10%%: %s)\n", m1 / m0, drop,
				sp, (drop <= 10 && d <= sp) ? "met" : "NOT met"
			pr = ""; for (i = 1; i <= n3; i++) pr = pr sprintf(" %.3f", r[i])
			pm = median(r, n3)
			printf "paired ratios with/without, run by run:%s; their median %.3f: drop %.1f%% (goal <= 10%%: %s)\n", pr, pm, (1 - pm) * 100, (1 - pm) * 100 <= 10 ? "met" : "NOT met"
			split(sb, b, " "); split(sa, c, " ")
			printf "schedule during the runs with them: %d index scans of expected_payments_query_idx, %d sequential scans of expected_payments, %d questions to the double (nothing due)\n",
				c[1] - b[1], c[2] - b[2], asked
		}' <(sort -g "$work/ex_none.txt") <(sort -g "$work/ex_with.txt") "$work/ex_none.txt" "$work/ex_with.txt"
	tail -1 "$work/ex_plan.txt"
} | tee -a "$work/expect_summary.txt"
uptime | tee -a "$work/expect_summary.txt"
if [[ "${BENCH_KEEP:-0}" != 1 ]]; then dropdb --if-exists "$ex_none"; dropdb --if-exists "$ex_with"; fi

echo "== 10b. the sweep: $EX_SWEEP due expected payments asked of the Stripe double at ONCELEDGER_QUERY_RATE=$EX_RATE"
ex_seed "$ex_sweep" "$EX_SWEEP" pi_sweep_
psql -Atc "UPDATE expected_payments SET next_query_at = now() WHERE status = 'expected'" "$ex_sweep" >/dev/null
curl -fsS -X POST "http://${doubles_addr}/_bench/reset" >/dev/null
uptime
t_serve=$(date +%s.%N)
ex_serve "$ex_sweep" sweep ONCELEDGER_QUERY_RATE="$EX_RATE"
paid=0
for _ in $(seq 1 $((EX_SWEEP * 10 / EX_RATE * 4 + 1200))); do
	paid="$(psql -Atc "SELECT count(*) FROM expected_payments WHERE status = 'paid'" "$ex_sweep")"
	[[ "$paid" -ge "$EX_SWEEP" ]] && break
	sleep 0.1
done
t_paid=$(date +%s.%N)
curl -fsS "http://${doubles_addr}/_bench/stats" >"$work/ex_sweep_stats.json"
ex_stop
jq -r --arg rate "$EX_RATE" --arg n "$EX_SWEEP" --arg paid "$paid" --arg t0 "$t_serve" --arg t1 "$t_paid" '
	"sweep: \(.asks) questions at \(.per_second*10|round/10)/s against the rate limit \($rate)/s (\((.per_second / ($rate|tonumber) * 100)|round)%); \($paid) of \($n) paid \((($t1|tonumber) - .first_unix)*10|round/10) s after the first question (ideal \($n|tonumber) / \($rate) = \(($n|tonumber) / ($rate|tonumber)*10|round/10) s; \((($t1|tonumber) - ($t0|tonumber))*10|round/10) s from serve start)"' \
	"$work/ex_sweep_stats.json" | tee -a "$work/expect_summary.txt"
uptime | tee -a "$work/expect_summary.txt"
[[ "$paid" -ge "$EX_SWEEP" ]] || { echo "bench: the sweep left $((EX_SWEEP - paid)) unpaid" >&2; status=1; }
ex_cleanup
trap cleanup EXIT
