# Step 8 of bench/run.sh (sourced by it: its helpers and $work, $tag,
# $status): the hostile soak of issue 33, on loopback only.
#
#   serve on a fresh database; bench/hostile holds BENCH_HOSTILE_IDLE idle
#   connections (half never send a request, half idle after a 401),
#   BENCH_HOSTILE_POLLS long polls with a read token, sends forged Standard
#   Webhooks, Stripe and Alipay notifications (50/s), a WeChat Pay gzip bomb
#   (256 MiB in one line) and an Alipay zip of 100,000 empty entries every
#   15 s, and holds 16 slow uploads (settlement reports and webhook bodies
#   trickled a byte every 2 s); beside it, cmd/loadgen sends
#   BENCH_HOSTILE_RATE signed webhooks/s of legitimate traffic in open
#   loop. For BENCH_HOSTILE_SECONDS (default 600). Printed: the legitimate
#   traffic's failures (every answer that is not 2xx, and transport
#   errors; goal 0) and p99 from the scheduled send time (goal <= 100 ms),
#   the ledger against loadgen's model (goal: matches), the server's peak
#   RSS (goal < 512 MiB) and the samples' maximum, the load average before
#   and after, and what the server answered to each hostile kind.
#
# bench/run.sh hostile    this step only (make bench-hostile)

HS_SECONDS=${BENCH_HOSTILE_SECONDS:-600}
HS_RATE=${BENCH_HOSTILE_RATE:-1000}
HS_IDLE=${BENCH_HOSTILE_IDLE:-2000}
HS_POLLS=${BENCH_HOSTILE_POLLS:-500}
go build -o "$work/hostile" ./bench/hostile
hs_token="bench-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
hs_admin="bench-admin-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
hs_std="whsec_$(head -c 24 /dev/urandom | base64)"
hs_stripe="whsec_bench$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
hs_db="onceledger_bench_hostile_${tag}"
hs_addr="127.0.0.1:$(free_port)"
hostile_pid=""
rss_pid=""
hs_stop() {
	if [[ -n "$hostile_pid" ]]; then kill "$hostile_pid" 2>/dev/null || true; wait "$hostile_pid" 2>/dev/null || true; hostile_pid=""; fi
	if [[ -n "$rss_pid" ]]; then kill "$rss_pid" 2>/dev/null || true; wait "$rss_pid" 2>/dev/null || true; rss_pid=""; fi
	if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; server_pid=""; fi
	if [[ "${BENCH_KEEP:-0}" != 1 ]]; then dropdb --if-exists "$hs_db" 2>/dev/null || true; fi
}
trap 'hs_stop >/dev/null 2>&1; cleanup' EXIT

echo "== 8. hostile soak: ${HS_SECONDS}s of $HS_RATE signed webhooks/s beside $HS_IDLE idle connections, $HS_POLLS long polls, forged notifications, decompression bombs and slow uploads"
# Alipay configured (a key of our own) so that forged Alipay forms meet its
# signature check rather than a 404.
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/hs_alipay_key.pem" 2>/dev/null
openssl pkey -in "$work/hs_alipay_key.pem" -pubout -out "$work/hs_alipay_pub.pem"
createdb "$hs_db"
env ONCELEDGER_DATABASE_URL="$(pgurl "$hs_db")" ONCELEDGER_ADDR="$hs_addr" ONCELEDGER_API_TOKENS="$hs_token" \
	ONCELEDGER_ADMIN_TOKENS="bench=$hs_admin" ONCELEDGER_STANDARD_SECRETS="$hs_std" ONCELEDGER_STRIPE_SECRETS="$hs_stripe" \
	ONCELEDGER_ALIPAY_PUBLIC_KEYS="$work/hs_alipay_pub.pem" ONCELEDGER_ALIPAY_APP_IDS=2021000000000001 \
	ONCELEDGER_LOG_LEVEL=warn "$work/onceledger" serve >"$work/hs_serve.log" 2>&1 &
server_pid=$!
wait_ready "$hs_addr" "$server_pid" "$work/hs_serve.log"
# The server's resident set, every second (kB), for the samples' maximum;
# VmHWM at the end is the peak the kernel saw.
(while kill -0 "$server_pid" 2>/dev/null; do awk '/^VmRSS/ {print $2}' "/proc/$server_pid/status" 2>/dev/null; sleep 1; done) >"$work/hs_rss.txt" &
rss_pid=$!
hs_load_before="$(cut -d' ' -f1-3 /proc/loadavg)"

"$work/hostile" --url "http://$hs_addr" --token "$hs_token" --admin-token "$hs_admin" --duration "${HS_SECONDS}s" \
	--idle "$HS_IDLE" --polls "$HS_POLLS" >"$work/hostile.txt" 2>&1 &
hostile_pid=$!
for _ in $(seq 1 600); do
	grep -q '^hostile: running' "$work/hostile.txt" 2>/dev/null && break
	kill -0 "$hostile_pid" 2>/dev/null || { cat "$work/hostile.txt" >&2; echo "bench: hostile exited" >&2; exit 1; }
	sleep 0.1
done
sleep 5 # the idle connections and polls take their places first
hs_legit=$((HS_SECONDS > 15 ? HS_SECONDS - 10 : 5))
"$work/loadgen" --url "http://$hs_addr" --token "$hs_token" --standard-secret "$hs_std" --stripe-secret "$hs_stripe" \
	--providers standard,stripe --payments 0 --duration "${hs_legit}s" --rate "$HS_RATE" --open-loop --duplicates 0.2 \
	--lag-interval 0 --baseline=false --json >"$work/hs_legit.json" || status=$?
wait "$hostile_pid" || status=$?
hostile_pid=""
hs_load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
hs_hwm="$(awk '/^VmHWM/ {print $2}' "/proc/$server_pid/status" 2>/dev/null || echo 0)"
hs_rss_max="$(sort -n "$work/hs_rss.txt" | tail -1)"
# What admission did (adapters/admission's counters; docs/security.md).
curl -fsS "http://$hs_addr/metrics" 2>/dev/null | grep -E '^onceledger_admission_[a-z_]+_total' | grep -v ' 0$' >"$work/hs_admission.txt" || true
hs_stop

{
	jq -r --argjson hwm "${hs_hwm:-0}" --argjson rssmax "${hs_rss_max:-0}" --arg lb "$hs_load_before" --arg la "$hs_load_after" '
		(.outcomes["4xx"] + .outcomes["5xx"] + (.outcomes.shed // 0) + (.outcomes.unanswered // 0) + .outcomes.other_status + .outcomes.transport_errors) as $fail |
		"hostile soak (\(.send_seconds|floor)s of legitimate traffic at \(.rate)/s offered, achieved \(.deliveries_per_second|floor)/s; load average before \($lb), after \($la)):",
		"  legitimate failures: \($fail) (5xx \(.outcomes["5xx"]), shed \(.outcomes.shed // 0), unanswered at the hard end \(.outcomes.unanswered // 0), 4xx \(.outcomes["4xx"]), transport \(.outcomes.transport_errors), other \(.outcomes.other_status); goal 0: \(if $fail == 0 then "met" else "NOT met" end))",
		"  legitimate p99: \(.latency_ms.p99*10|round/10) ms from the scheduled send (p50 \(.latency_ms.p50*10|round/10) ms; goal <= 100 ms: \(if .latency_ms.p99 <= 100 then "met" else "NOT met" end))",
		"  ledger against the model: \(.verdict), \(.differences|length) difference(s) over \(.balances_compared) balances (goal: matches)",
		"  server RSS: peak \($hwm/1024|floor) MiB (VmHWM), samples max \($rssmax/1024|floor) MiB (goal < 512 MiB: \(if $hwm < 512*1024 then "met" else "NOT met" end))"' \
		"$work/hs_legit.json"
	sed -n 's/^hostile /  hostile /p' "$work/hostile.txt"
	sed 's/^/  server /' "$work/hs_admission.txt"
} | tee "$work/hostile_summary.txt"
