#!/usr/bin/env bash
# Re-captures fixtures/nextjs/ from the real Next.js app in fixtures/nextjs-app/.
#
#   scripts/capture-nextjs-fixtures.sh
#
# 1. installs the app's locked dependencies (npm ci) and builds it (next build);
# 2. runs `next start` on a free 127.0.0.1 port;
# 3. drives the app once in headless Chromium (Debian's chromium, playwright-core in .tools/)
#    to learn which requests a browser really makes: page loads, client-side navigations,
#    prefetches and segment prefetches;
# 4. sends those requests again from a raw socket that records when every chunk arrived, and
#    writes fixtures/nextjs/ (format: fixtures/nextjs/README.md);
# 5. stops the server it started.
# The demo origin replays the result under /next/ without Node.
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

APP="$ROOT/fixtures/nextjs-app"
OUT="$ROOT/fixtures/nextjs"
PLAYWRIGHT_CORE_VERSION="1.65.1"
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
export NEXT_TELEMETRY_DISABLED=1

if [[ ! -x "$CHROMIUM" ]]; then
  log "installing Debian's chromium"
  apt-get update -qq && apt-get install -y -qq chromium >&2
fi
if [[ ! -f "$ROOT/.tools/node_modules/playwright-core/package.json" ]] ||
  ! grep -q "\"version\": \"${PLAYWRIGHT_CORE_VERSION}\"" "$ROOT/.tools/node_modules/playwright-core/package.json"; then
  log "installing playwright-core ${PLAYWRIGHT_CORE_VERSION} into .tools/"
  npm install --silent --no-audit --no-fund --prefix "$ROOT/.tools" \
    "playwright-core@${PLAYWRIGHT_CORE_VERSION}" >&2
fi

cd "$APP"
log "installing the app's dependencies (npm ci)"
npm ci --prefer-offline --no-audit --no-fund >&2
log "building the app (next build)"
rm -rf .next
node node_modules/next/dist/bin/next build >&2

work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then
    kill "$server_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

port="$(free_port)"
log "starting next start on 127.0.0.1:${port}"
node node_modules/next/dist/bin/next start -H 127.0.0.1 -p "$port" >"$work/next.log" 2>&1 &
server_pid=$!
if ! wait_http "$port" /next 60; then
  cat "$work/next.log" >&2
  exit 1
fi

cd "$ROOT"
log "driving the app in headless Chromium"
timeout 300 node scripts/nextjs_browser_probe.mjs "http://127.0.0.1:${port}" "$work/probe.json"
log "capturing responses with chunk timing into ${OUT#"$ROOT"/}"
timeout 600 python3 scripts/capture_nextjs.py --base "http://127.0.0.1:${port}" \
  --probe "$work/probe.json" --app "$APP" --out "$OUT"
cp "$work/probe.json" "$OUT/browser-requests.json"
