# Step 7 of bench/run.sh (sourced by it: its helpers and $work, $CONC, $status):
# the outbound side (docs/events.md).
#
#   7a. Latency: serve with one subscription (payment.captured) to bench/recv,
#       cmd/loadgen offering BENCH_OUTBOUND_RATE webhooks/s in open loop for
#       BENCH_OUTBOUND_SECONDS: p50 and p99 from the commit of the webhook that
#       made each fact (its recorded_at, which precedes the webhook's 200: an
#       upper bound of "webhook 200 to the subscriber's receipt") to the
#       subscriber's first receipt. Goal: p99 <= 100 ms.
#   7b. The ingest maximum (closed loop, BENCH_OUTBOUND_PAYMENTS payments) with
#       no subscription, then on a fresh database with three subscriptions (all
#       types): webhooks/s of each, the drop (goal <= 25%), the sender's
#       deliveries/s across the three, and how long after the last webhook the
#       last delivery arrived.
#   7c. JetStream (BENCH_NATS_URL, default nats://127.0.0.1:4222, skipped when
#       nothing answers there): serve publishing while loadgen runs at its
#       maximum; messages/s from the stream's first and last message times.
#
# bench/run.sh outbound    this step only

OUT_RATE=${BENCH_OUTBOUND_RATE:-1000}
OUT_SECONDS=${BENCH_OUTBOUND_SECONDS:-20}
OUT_PAYMENTS=${BENCH_OUTBOUND_PAYMENTS:-3000}
OUT_NATS=${BENCH_NATS_URL:-nats://127.0.0.1:4222}
go build -o "$work/recv" ./bench/recv
ob_token="bench-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
ob_admin="bench-admin-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
ob_std="whsec_$(head -c 24 /dev/urandom | base64)"
ob_stripe="whsec_bench$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
ob_key="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
recv_pid=""
: >"$work/outbound_summary.txt"

# ob_serve NAME [VAR=value…]: serve on a fresh database onceledger_bench_ob_NAME_$tag.
ob_serve() {
	local name=$1
	shift
	ob_db="onceledger_bench_ob_${name}_${tag}"
	ob_addr="127.0.0.1:$(free_port)"
	createdb "$ob_db"
	env ONCELEDGER_DATABASE_URL="$(pgurl "$ob_db")" ONCELEDGER_ADDR="$ob_addr" ONCELEDGER_API_TOKENS="$ob_token" \
		ONCELEDGER_ADMIN_TOKENS="bench=$ob_admin" ONCELEDGER_STANDARD_SECRETS="$ob_std" ONCELEDGER_STRIPE_SECRETS="$ob_stripe" \
		ONCELEDGER_SECRETS_KEY="$ob_key" ONCELEDGER_OUTBOX_ALLOW_PRIVATE=true ONCELEDGER_LOG_LEVEL=warn "$@" \
		"$work/onceledger" serve >"$work/ob_${name}_serve.log" 2>&1 &
	server_pid=$!
	for _ in $(seq 1 100); do
		curl -fsS "http://${ob_addr}/readyz" >/dev/null 2>&1 && break
		kill -0 "$server_pid" 2>/dev/null || { cat "$work/ob_${name}_serve.log" >&2; echo "bench: server exited" >&2; exit 1; }
		sleep 0.2
	done
	curl -fsS "http://${ob_addr}/readyz" >/dev/null || { cat "$work/ob_${name}_serve.log" >&2; exit 1; }
}

ob_stop() {
	if [[ -n "$recv_pid" ]]; then kill "$recv_pid" 2>/dev/null || true; wait "$recv_pid" 2>/dev/null || true; recv_pid=""; fi
	kill "$server_pid" 2>/dev/null || true
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
	if [[ "${BENCH_KEEP:-0}" != 1 ]]; then dropdb --if-exists "$ob_db"; fi
}
trap 'ob_stop >/dev/null 2>&1; cleanup' EXIT

# ob_subscribe PATH [TYPES-JSON]: a subscription to bench/recv's PATH; prints its secret.
ob_subscribe() {
	local body
	body="$(jq -nc --arg url "http://${recv_addr}$1" --argjson types "${2:-null}" '{url: $url, description: "bench"} + (if $types then {types: $types} else {} end)')"
	curl -fsS -H "Authorization: Bearer $ob_admin" -H 'Content-Type: application/json' -d "$body" \
		"http://${ob_addr}/v1/subscriptions" | jq -er .secret
}

# ob_recv SECRETS: starts bench/recv on $recv_addr.
ob_recv() {
	"$work/recv" --addr "$recv_addr" --secrets "$1" >"$work/recv.log" 2>&1 &
	recv_pid=$!
	for _ in $(seq 1 50); do curl -fsS "http://${recv_addr}/stats" >/dev/null 2>&1 && return; sleep 0.1; done
	cat "$work/recv.log" >&2
	exit 1
}

# ob_drain OUT: waits until bench/recv has received nothing new for 3 s (at most 5 min) and saves its stats.
ob_drain() {
	local prev=-1 now stable=0
	for _ in $(seq 1 3000); do
		now="$(curl -fsS "http://${recv_addr}/stats" | jq .unique)"
		if [[ "$now" == "$prev" ]]; then stable=$((stable + 1)); else stable=0; fi
		[[ "$stable" -ge 30 ]] && break
		prev=$now
		sleep 0.1
	done
	curl -fsS "http://${recv_addr}/stats" >"$1"
}

ob_loadgen() { # OUT [loadgen flags…]
	local out=$1
	shift
	"$work/loadgen" --url "http://${ob_addr}" --token "$ob_token" --standard-secret "$ob_std" --stripe-secret "$ob_stripe" \
		--baseline=false --lag-interval 0 --json "$@" >"$out" || status=$?
}

echo "== 7a. outbound latency: webhook commit to subscriber receipt at $OUT_RATE webhooks/s offered, ${OUT_SECONDS}s"
recv_addr="127.0.0.1:$(free_port)"
ob_serve latency
ob_recv "$(ob_subscribe /s/shop '["payment.captured"]')"
ob_loadgen "$work/ob_latency.json" --payments 0 --duration "${OUT_SECONDS}s" --rate "$OUT_RATE" --open-loop --duplicates 0.2
ob_drain "$work/ob_latency_recv.json"
jq -r '"ingest: achieved \(.deliveries_per_second|floor)/s  p99 \(.latency_ms.p99*10|round/10) ms  \(.verdict)"' "$work/ob_latency.json"
jq -r --arg r "$OUT_RATE" '"outbound latency at \($r)/s offered: \(.unique) events received (\(.received) POSTs), p50 \(.latency_ms.p50*10|round/10) ms  p99 \(.latency_ms.p99*10|round/10) ms  max \(.latency_ms.max*10|round/10) ms (from the commit: an upper bound of webhook 200 to receipt; goal p99 <= 100 ms)"' \
	"$work/ob_latency_recv.json" | tee -a "$work/outbound_summary.txt"
ob_stop

echo "== 7b. ingest maximum without and with 3 subscriptions: $OUT_PAYMENTS payments, $CONC senders"
ob_serve nosubs
ob_loadgen "$work/ob_nosubs.json" --payments "$OUT_PAYMENTS" --concurrency "$CONC" --duplicates 0.2
ob_stop
recv_addr="127.0.0.1:$(free_port)"
ob_serve subs
ob_recv "$(ob_subscribe /s/a),$(ob_subscribe /s/b),$(ob_subscribe /s/c)"
t_start=$(date +%s.%N)
ob_loadgen "$work/ob_subs.json" --payments "$OUT_PAYMENTS" --concurrency "$CONC" --duplicates 0.2 --wait 120s
t_load=$(date +%s.%N)
ob_drain "$work/ob_subs_recv.json"
ob_feed="$(psql -Atc "SELECT count(*) FROM events" "$ob_db")"
ob_stop
ob_w0="$(jq .deliveries_per_second "$work/ob_nosubs.json")"
ob_w3="$(jq .deliveries_per_second "$work/ob_subs.json")"
{
	printf 'ingest maximum: %.1f webhooks/s without subscriptions, %.1f with 3: drop %.1f%% (goal <= 25%%)\n' \
		"$ob_w0" "$ob_w3" "$(jq -n "(1 - $ob_w3 / $ob_w0) * 100")"
	jq -r --arg feed "$ob_feed" --arg t0 "$t_start" --arg t1 "$t_load" '"sender with 3 subscriptions: \(.unique) deliveries of \($feed|tonumber * 3) (3 x \($feed) events) at \(.per_second|floor)/s; per subscription \(.per_path|tostring); last receipt \((.last_unix - ($t1|tonumber))*10|round/10)s after the load ended (load \((($t1|tonumber) - ($t0|tonumber))*10|round/10)s, its ledger check included)"' \
		"$work/ob_subs_recv.json"
} | tee -a "$work/outbound_summary.txt"

if "$work/recv" jetstream --url "$OUT_NATS" --stream none --want 0 --timeout 2s >/dev/null 2>&1; then
	echo "== 7c. JetStream publish rate ($OUT_NATS) while loadgen runs at its maximum"
	ob_subject="bench_${tag}.events"
	ob_stream="BENCH_${tag}"
	ob_serve nats ONCELEDGER_OUTBOX_NATS_URL="$OUT_NATS" ONCELEDGER_OUTBOX_NATS_SUBJECT="$ob_subject" ONCELEDGER_OUTBOX_NATS_STREAM="$ob_stream"
	ob_loadgen "$work/ob_nats.json" --payments "$OUT_PAYMENTS" --concurrency "$CONC" --duplicates 0.2
	ob_feed="$(psql -Atc "SELECT count(*) FROM events" "$ob_db")"
	"$work/recv" jetstream --url "$OUT_NATS" --stream "$ob_stream" --want "$ob_feed" --timeout 2m --delete >"$work/ob_nats_rate.json" || status=$?
	ob_stop
	jq -r --arg w "$(jq .deliveries_per_second "$work/ob_nats.json")" '"JetStream: \(.messages) of \(.want) events published at \(.per_second|floor) msgs/s (ingest meanwhile \($w|tonumber|floor) webhooks/s)"' \
		"$work/ob_nats_rate.json" | tee -a "$work/outbound_summary.txt"
else
	echo "== 7c. JetStream: nothing answers at $OUT_NATS; skipped" | tee -a "$work/outbound_summary.txt"
fi
trap cleanup EXIT
