#!/usr/bin/env bash
# screenshots: the README's console pictures, from the demo's data (make
# screenshots). Starts `make demo` on a free port, waits until it is loaded,
# crawls its console as its admin with the console's crawler
# (TestConsoleCrawl with ONCELEDGER_CRAWL_URL), which writes a 1280×800
# picture of each kind of page into docs/console/, then stops the demo.
# Needs Debian's chromium, as the crawler's tests do.
set -euo pipefail
cd "$(dirname "$0")/.."
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
log=$(mktemp)
ONCELEDGER_ADDR=127.0.0.1:$port scripts/demo.sh >"$log" 2>&1 &
demo=$!
trap 'kill -TERM $demo 2>/dev/null; wait $demo 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 1 600); do
  grep -q '^demo: ready' "$log" && break
  kill -0 $demo 2>/dev/null || { cat "$log" >&2; echo "screenshots: the demo stopped" >&2; exit 1; }
  sleep 1
done
grep -q '^demo: ready' "$log" || { cat "$log" >&2; echo "screenshots: the demo was not ready in 10 minutes" >&2; exit 1; }
# shellcheck disable=SC1091
. .devdb/demo/env
ONCELEDGER_SCREENSHOTS=1 ONCELEDGER_CRAWL_URL=http://127.0.0.1:$port ONCELEDGER_CRAWL_TOKEN=${ONCELEDGER_ADMIN_TOKENS#*=} \
  env -u ONCELEDGER_API_TOKENS -u ONCELEDGER_ADMIN_TOKENS -u ONCELEDGER_STANDARD_SECRETS -u ONCELEDGER_STRIPE_SECRETS \
  -u ONCELEDGER_ALIPAY_PUBLIC_KEYS -u ONCELEDGER_ALIPAY_APP_IDS -u ONCELEDGER_WECHATPAY_KEYS -u ONCELEDGER_WECHATPAY_APIV3_KEYS \
  -u ONCELEDGER_WECHATPAY_MCHIDS ${GO:-go} test -count=1 -run 'TestConsoleCrawl$' ./cmd/onceledger/
echo "screenshots: docs/console/*.png from the demo's data"
