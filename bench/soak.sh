# Step 11 of bench/run.sh (sourced by it: its helpers and $work, $tag,
# $status): the soak of issue 40's "done when" (docs/operations.md,
# "Soak"): serve on a fresh database, cmd/loadgen offering BENCH_SOAK_RATE
# signed webhooks/s (Standard Webhooks and Stripe, 20 % duplicates, 10 %
# reordered, 1 % conflicting redeliveries) in open loop for
# BENCH_SOAK_SECONDS, then the ledger compared with loadgen's model.
# Printed, each with its goal: deliveries never answered 2xx (goal 0), error
# answers (5xx, 4xx, transport errors; goal 0), shed answers (429 or 503
# with Retry-After: admission at work, retried; counted, not failures),
# the ledger against
# the model (goal: matches), the server's RSS per minute (goal: flat, the
# last minute of load no more than 10 % above the highest minute before it,
# the first minute excepted: it warms the pools and caches; a growth that
# goes on makes every minute a new high), the Go heap in use and the
# goroutines per minute (a leak grows the heap in use; RSS also holds what
# the runtime keeps between collections), the server's log lines at level
# ERROR (goal 0), the load average before and after.
#
# bench/run.sh soak    this step only (make bench-soak)

SK_SECONDS=${BENCH_SOAK_SECONDS:-240}
SK_RATE=${BENCH_SOAK_RATE:-2000}
sk_token="bench-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
sk_std="whsec_$(head -c 24 /dev/urandom | base64)"
sk_stripe="whsec_bench$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
sk_db="onceledger_bench_soak_${tag}"
sk_addr="127.0.0.1:$(free_port)"
sk_pprof="127.0.0.1:$(free_port)"
sk_rss_pid=""
sk_heap_pid=""
sk_stop() {
	if [[ -n "$sk_rss_pid" ]]; then kill "$sk_rss_pid" 2>/dev/null || true; wait "$sk_rss_pid" 2>/dev/null || true; sk_rss_pid=""; fi
	if [[ -n "$sk_heap_pid" ]]; then kill "$sk_heap_pid" 2>/dev/null || true; wait "$sk_heap_pid" 2>/dev/null || true; sk_heap_pid=""; fi
	if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; server_pid=""; fi
	if [[ "${BENCH_KEEP:-0}" != 1 ]]; then dropdb --if-exists "$sk_db" 2>/dev/null || true; fi
}
trap 'sk_stop >/dev/null 2>&1; cleanup' EXIT

echo "== 11. soak: ${SK_SECONDS}s of $SK_RATE signed webhooks/s offered (open loop), the ledger against the model, RSS per minute"
createdb "$sk_db"
env ONCELEDGER_DATABASE_URL="$(pgurl "$sk_db")" ONCELEDGER_ADDR="$sk_addr" ONCELEDGER_API_TOKENS="$sk_token" \
	ONCELEDGER_STANDARD_SECRETS="$sk_std" ONCELEDGER_STRIPE_SECRETS="$sk_stripe" \
	ONCELEDGER_LOG_LEVEL=warn "$work/onceledger" serve --pprof-addr "$sk_pprof" >"$work/sk_serve.log" 2>&1 &
server_pid=$!
wait_ready "$sk_addr" "$server_pid" "$work/sk_serve.log"
# The server's resident set every second (kB), for the per-minute means.
(while kill -0 "$server_pid" 2>/dev/null; do awk '/^VmRSS/ {print $2}' "/proc/$server_pid/status" 2>/dev/null; sleep 1; done) >"$work/sk_rss.txt" &
sk_rss_pid=$!
# The Go heap in use and the goroutines every 5 s (the server's /metrics):
# RSS also holds what the runtime keeps after a collection (GOGC=300), so a
# leak shows as a growing heap in use, not as RSS alone.
(while kill -0 "$server_pid" 2>/dev/null; do
	curl -fsS "http://$sk_addr/metrics" 2>/dev/null | awk '/^go_memstats_heap_inuse_bytes / {h = $2} /^go_goroutines / {g = $2} END {if (h != "") print h, g}'
	sleep 5
done) >"$work/sk_heap.txt" &
sk_heap_pid=$!
# The heap a minute in and at the end: what grew between them, if RSS did.
(sleep 60; curl -fsS "http://$sk_pprof/debug/pprof/heap" -o "$work/sk_heap_1.pb.gz") &
sk_load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
"$work/loadgen" --url "http://$sk_addr" --token "$sk_token" --standard-secret "$sk_std" --stripe-secret "$sk_stripe" \
	--providers standard,stripe --payments 0 --duration "${SK_SECONDS}s" --rate "$SK_RATE" --open-loop \
	--duplicates 0.2 --reorder 0.1 --conflicts 0.01 --lag-interval 0 --baseline=false --wait 5m --json \
	>"$work/sk.json" 2>"$work/sk.err" || status=$?
sk_load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
curl -fsS "http://$sk_pprof/debug/pprof/heap" -o "$work/sk_heap_end.pb.gz" || true
sk_errors="$(grep -c 'level=ERROR' "$work/sk_serve.log" || true)"
sk_stop
# Per-minute means of the samples (MiB), in order.
sk_minutes="$(awk '{s[int((NR-1)/60)] += $1; n[int((NR-1)/60)]++} END {for (m = 0; m in n; m++) printf "%s%.0f", (m ? " " : ""), s[m] / n[m] / 1024}' "$work/sk_rss.txt")"
sk_heap_minutes="$(awk '{m = int((NR-1)/12); h[m] += $1; g[m] += $2; n[m]++} END {for (m = 0; m in n; m++) printf "%s%.0f MiB/%.0f", (m ? ", " : ""), h[m] / n[m] / 1048576, g[m] / n[m]}' "$work/sk_heap.txt")"
{
	jq -r --arg lb "$sk_load_before" --arg la "$sk_load_after" --arg mins "$sk_minutes" --argjson load_minutes "$(((SK_SECONDS + 59) / 60))" --argjson errs "${sk_errors:-0}" '
		((.outcomes.undelivered // 0) + (.outcomes.unanswered // 0)) as $lost |
		(.outcomes["4xx"] + .outcomes["5xx"] + .outcomes.other_status + .outcomes.transport_errors) as $errs_ |
		($mins | split(" ") | map(tonumber)) as $m |
		# The minutes of load only (the samples go on while the ledger is compared).
		($m[0:$load_minutes]) as $l |
		(if ($l | length) >= 3 then (($l[-1] - ($l[1:-1] | max)) / ($l[1:-1] | max) * 100) else 0 end) as $growth |
		"soak (\(.send_seconds|floor)s at \(.rate)/s offered, achieved \(.deliveries_per_second|floor)/s, \(.outcomes.accepted) accepted; load average before \($lb), after \($la)):",
		"  deliveries never answered 2xx: \($lost) (gave up after their attempts \(.outcomes.undelivered // 0), unanswered at the hard end \(.outcomes.unanswered // 0)); goal 0: \(if $lost == 0 then "met" else "NOT met" end)",
		"  error answers: \($errs_) (5xx \(.outcomes["5xx"]), 4xx \(.outcomes["4xx"]), transport \(.outcomes.transport_errors), other \(.outcomes.other_status)); goal 0: \(if $errs_ == 0 then "met" else "NOT met" end)",
		"  shed answers (429/503 with Retry-After, each retried as a provider retries): \(.outcomes.shed // 0), \((.outcomes.shed // 0) * 1000 / ([.outcomes.accepted, .outcomes.duplicate, .outcomes.ignored] | add) | round / 10) % of the deliveries",
		"  p99 \(.latency_ms.p99*10|round/10) ms from the scheduled send (p50 \(.latency_ms.p50*10|round/10) ms)",
		"  ledger against the model: \(.verdict), \(.differences|length) difference(s) over \(.balances_compared) balances (goal: matches)",
		"  server RSS per minute (MiB, the first \($load_minutes) under load): \($mins); the last minute of load against the highest before it (the first excepted): \($growth*10|round/10) % (goal: flat, no new high beyond 10 %: \(if $growth <= 10 then "met" else "NOT met" end))",
		"  server log lines at level ERROR: \($errs) (goal 0)"' "$work/sk.json"
	echo "  server Go heap in use / goroutines, per minute: $sk_heap_minutes"
	if [[ -s "$work/sk_heap_1.pb.gz" && -s "$work/sk_heap_end.pb.gz" ]]; then
		echo "  server heap in use, a minute in and at the end (after the ledger's comparison): what grew most"
		go tool pprof -top -sample_index=inuse_space -diff_base="$work/sk_heap_1.pb.gz" "$work/onceledger" "$work/sk_heap_end.pb.gz" 2>/dev/null |
			awk '/^Showing nodes/ {on = 1} on && k++ < 14 {print "    " $0}'
	fi
} | tee "$work/soak_summary.txt"
trap cleanup EXIT
