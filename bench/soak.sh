# Step 11 of bench/run.sh (sourced by it: its helpers and $work, $tag,
# $status): the soak of issue 40's "done when" (docs/operations.md,
# "Soak"): serve on a fresh database, cmd/loadgen offering BENCH_SOAK_RATE
# signed webhooks/s (Standard Webhooks and Stripe, 20 % duplicates, 10 %
# reordered, 1 % conflicting redeliveries) in open loop for
# BENCH_SOAK_SECONDS, then the ledger compared with loadgen's model.
# Printed, each with its goal: failures (every answer that is not 2xx,
# shed answers included, and transport errors; goal 0), the ledger against
# the model (goal: matches), the server's RSS per minute (goal: flat, the
# last minute's mean within 10 % of the second's: the first minute warms
# the caches and pools), the server's log lines at level ERROR (goal 0),
# the load average before and after.
#
# bench/run.sh soak    this step only (make bench-soak)

SK_SECONDS=${BENCH_SOAK_SECONDS:-240}
SK_RATE=${BENCH_SOAK_RATE:-2000}
sk_token="bench-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
sk_std="whsec_$(head -c 24 /dev/urandom | base64)"
sk_stripe="whsec_bench$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
sk_db="onceledger_bench_soak_${tag}"
sk_addr="127.0.0.1:$(free_port)"
sk_rss_pid=""
sk_stop() {
	if [[ -n "$sk_rss_pid" ]]; then kill "$sk_rss_pid" 2>/dev/null || true; wait "$sk_rss_pid" 2>/dev/null || true; sk_rss_pid=""; fi
	if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; server_pid=""; fi
	if [[ "${BENCH_KEEP:-0}" != 1 ]]; then dropdb --if-exists "$sk_db" 2>/dev/null || true; fi
}
trap 'sk_stop >/dev/null 2>&1; cleanup' EXIT

echo "== 11. soak: ${SK_SECONDS}s of $SK_RATE signed webhooks/s offered (open loop), the ledger against the model, RSS per minute"
createdb "$sk_db"
env ONCELEDGER_DATABASE_URL="$(pgurl "$sk_db")" ONCELEDGER_ADDR="$sk_addr" ONCELEDGER_API_TOKENS="$sk_token" \
	ONCELEDGER_STANDARD_SECRETS="$sk_std" ONCELEDGER_STRIPE_SECRETS="$sk_stripe" \
	ONCELEDGER_LOG_LEVEL=warn "$work/onceledger" serve >"$work/sk_serve.log" 2>&1 &
server_pid=$!
wait_ready "$sk_addr" "$server_pid" "$work/sk_serve.log"
# The server's resident set every second (kB), for the per-minute means.
(while kill -0 "$server_pid" 2>/dev/null; do awk '/^VmRSS/ {print $2}' "/proc/$server_pid/status" 2>/dev/null; sleep 1; done) >"$work/sk_rss.txt" &
sk_rss_pid=$!
sk_load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
"$work/loadgen" --url "http://$sk_addr" --token "$sk_token" --standard-secret "$sk_std" --stripe-secret "$sk_stripe" \
	--providers standard,stripe --payments 0 --duration "${SK_SECONDS}s" --rate "$SK_RATE" --open-loop \
	--duplicates 0.2 --reorder 0.1 --conflicts 0.01 --lag-interval 0 --baseline=false --wait 5m --json \
	>"$work/sk.json" 2>"$work/sk.err" || status=$?
sk_load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
sk_errors="$(grep -c 'level=ERROR' "$work/sk_serve.log" || true)"
sk_stop
# Per-minute means of the samples (MiB), in order.
sk_minutes="$(awk '{s[int((NR-1)/60)] += $1; n[int((NR-1)/60)]++} END {for (m = 0; m in n; m++) printf "%s%.0f", (m ? " " : ""), s[m] / n[m] / 1024}' "$work/sk_rss.txt")"
{
	jq -r --arg lb "$sk_load_before" --arg la "$sk_load_after" --arg mins "$sk_minutes" --argjson errs "${sk_errors:-0}" '
		(.outcomes["4xx"] + .outcomes["5xx"] + (.outcomes.shed // 0) + (.outcomes.unanswered // 0) + .outcomes.other_status + .outcomes.transport_errors) as $fail |
		($mins | split(" ") | map(tonumber)) as $m |
		(if ($m | length) >= 3 then (($m[-1] - $m[1]) / $m[1] * 100) else 0 end) as $growth |
		"soak (\(.send_seconds|floor)s at \(.rate)/s offered, achieved \(.deliveries_per_second|floor)/s, \(.outcomes.accepted) accepted; load average before \($lb), after \($la)):",
		"  failures: \($fail) (5xx \(.outcomes["5xx"]), shed \(.outcomes.shed // 0), unanswered \(.outcomes.unanswered // 0), 4xx \(.outcomes["4xx"]), transport \(.outcomes.transport_errors), other \(.outcomes.other_status)); goal 0: \(if $fail == 0 then "met" else "NOT met" end)",
		"  p99 \(.latency_ms.p99*10|round/10) ms from the scheduled send (p50 \(.latency_ms.p50*10|round/10) ms)",
		"  ledger against the model: \(.verdict), \(.differences|length) difference(s) over \(.balances_compared) balances (goal: matches)",
		"  server RSS per minute (MiB): \($mins); last against the second: \($growth*10|round/10) % (goal: within 10 %: \(if ($growth|fabs) <= 10 then "met" else "NOT met" end))",
		"  server log lines at level ERROR: \($errs) (goal 0)"' "$work/sk.json"
} | tee "$work/soak_summary.txt"
trap cleanup EXIT
