#!/usr/bin/env bash
# demo: a first hour that shows the whole system (make demo).
#
# Starts `onceledger serve` on a database of its own (onceledger_demo, on the
# same server `make run` uses), configured for Standard Webhooks, Stripe,
# Alipay and WeChat Pay with keys made here and kept in .devdb/demo/ (git
# ignored), then loads a month's worth of traffic through the real HTTP
# endpoints, exactly as providers would send it:
#
#   - signed webhooks of the four providers (cmd/loadgen: captures, refunds,
#     disputes, with redeliveries, some out of order, a few changed under the
#     same id), Alipay and WeChat Pay signed with RSA keys made here;
#   - the settlement reports and bills of docs/samples (Stripe, Adyen, PayPal,
#     Square, Alipay, WeChat Pay), uploaded as an accountant would;
#   - November closed (an accounting period) by the demo's admin.
#
# Then the server keeps running until Ctrl-C; the console is at
# http://ADDR/console (sign in with the admin token printed). README's "A
# first hour" says what you will see and why each item is there.
#
# Settings: ONCELEDGER_ADDR (default 127.0.0.1:8080), DEMO_PAYMENTS (per
# provider, default 200), DEMO_EXIT=1 (load, print, stop: the first-run test).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'demo: %s\n' "$*" >&2; }
GO=${GO:-go}
addr=${ONCELEDGER_ADDR:-127.0.0.1:8080}
payments=${DEMO_PAYMENTS:-200}
dir=.devdb/demo
mkdir -p "$dir" bin

# The database: the server `make run` would use, a database of its own.
eval "$(scripts/devdb.sh env run)"
# Unset when a server answers on the default address: serve's default then.
ONCELEDGER_DATABASE_URL=${ONCELEDGER_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/onceledger?sslmode=disable}
base_url=${ONCELEDGER_DATABASE_URL%%\?*}
query=${ONCELEDGER_DATABASE_URL#"$base_url"}
export ONCELEDGER_DATABASE_URL="${base_url%/*}/onceledger_demo$query"
admin_url="${base_url%/*}/postgres$query"
if command -v psql >/dev/null 2>&1; then
  psql -q "$admin_url" -c 'DROP DATABASE IF EXISTS onceledger_demo WITH (FORCE)' >/dev/null
fi

# Keys and secrets, made once and kept: the demo's providers.
if [ ! -f "$dir/env" ]; then
  say "making the demo's keys in $dir/"
  for k in alipay wechatpay; do
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$dir/${k}_key.pem" 2>/dev/null
    openssl pkey -in "$dir/${k}_key.pem" -pubout -out "$dir/${k}_pub.pem"
  done
  rand() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }
  cat >"$dir/env" <<EOF
export ONCELEDGER_API_TOKENS=reader=demo-read-$(rand 8)
export ONCELEDGER_ADMIN_TOKENS=admin=demo-admin-$(rand 8)
export ONCELEDGER_STANDARD_SECRETS=whsec_$(head -c 24 /dev/urandom | base64)
export ONCELEDGER_STRIPE_SECRETS=whsec_demo$(rand 12)
export ONCELEDGER_ALIPAY_PUBLIC_KEYS=$PWD/$dir/alipay_pub.pem
export ONCELEDGER_ALIPAY_APP_IDS=2021000000000001
export ONCELEDGER_WECHATPAY_KEYS=PUB_KEY_ID_0114232134912410000000000000=$PWD/$dir/wechatpay_pub.pem
export ONCELEDGER_WECHATPAY_APIV3_KEYS=$(rand 16)
export ONCELEDGER_WECHATPAY_MCHIDS=1900000109
EOF
fi
# shellcheck disable=SC1091
. "$dir/env"
export ONCELEDGER_ADDR=$addr ONCELEDGER_LOG_LEVEL=${ONCELEDGER_LOG_LEVEL:-warn}
admin_token=${ONCELEDGER_ADMIN_TOKENS#*=}
read_token=${ONCELEDGER_API_TOKENS#*=}

say "building bin/onceledger and bin/loadgen"
$GO build -o bin/onceledger ./cmd/onceledger
$GO build -o bin/loadgen ./cmd/loadgen

say "starting the server on $addr (database onceledger_demo; log $dir/serve.log)"
bin/onceledger serve >"$dir/serve.log" 2>&1 &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server 2>/dev/null' EXIT
for _ in $(seq 1 150); do
  curl -fsS "http://$addr/readyz" >/dev/null 2>&1 && break
  kill -0 $server 2>/dev/null || { cat "$dir/serve.log" >&2; say "the server did not start"; exit 1; }
  sleep 0.2
done

say "signed webhooks: $payments payments each of standard, stripe, alipay, wechatpay"
for p in standard,stripe alipay wechatpay; do
  bin/loadgen --url "http://$addr" --token "$read_token" --providers "$p" --payments "$payments" \
    --concurrency 8 --duplicates 0.2 --reorder 0.1 --conflicts 0.02 --lag-interval 0 \
    --alipay-private-key "$dir/alipay_key.pem" --wechatpay-private-key "$dir/wechatpay_key.pem" \
    >"$dir/loadgen-${p/,/-}.txt" 2>&1 || { cat "$dir/loadgen-${p/,/-}.txt" >&2; say "loadgen $p failed"; exit 1; }
  grep -m1 -E '^outcomes:' "$dir/loadgen-${p/,/-}.txt" | sed "s/^/demo:   $p: /" >&2 || true
done

say "settlement reports and bills of docs/samples"
upload() { # provider file
  curl -fsS -H "Authorization: Bearer $admin_token" --data-binary "@$2" \
    "http://$addr/v1/settlements/$1" >/dev/null || say "  $2 refused (see above)"
}
upload stripe docs/samples/stripe_payout_reconciliation.itemized.csv
upload stripe docs/samples/stripe_balance_transactions.json
upload adyen docs/samples/settlement_detail_report_batch_41.csv
upload paypal docs/samples/STL-20261130.01.009.CSV
upload square docs/samples/square_list_payout_entries.json
upload alipay docs/samples/alipay_20261130_trade.csv.zip
upload alipay docs/samples/alipay_20261130_signcustomer.csv
upload wechatpay docs/samples/wechatpay_tradebill_20261130.csv
upload wechatpay docs/samples/wechatpay_fundflowbill_20261130.csv

say "closing November 2026 (the samples' month) as the demo's admin"
curl -fsS -H "Authorization: Bearer $admin_token" -H 'Content-Type: application/json' \
  -d '{"note":"demo: November reconciled"}' "http://$addr/v1/periods/2026-11/close" >/dev/null ||
  say "  November could not be closed (an earlier period open?)"

open_items=$(curl -fsS -H "Authorization: Bearer $read_token" "http://$addr/v1/reconciliation?status=open&format=csv" | tail -n +2 | wc -l)
cat >&2 <<EOF

demo: ready. The console: http://$addr/console
demo:   sign in with the admin token  $admin_token  (acts: resolve, close periods)
demo:   or the read token             $read_token
demo:   $open_items open reconciliation items; README's "A first hour" says why each is there.
demo: the keys and tokens stay in $dir/env (source it to use the CLI against this server).
EOF
if [ "${DEMO_EXIT:-0}" = 1 ]; then
  exit 0
fi
say "serving until Ctrl-C"
trap - EXIT
trap 'kill -TERM $server 2>/dev/null' INT TERM
wait $server || true
