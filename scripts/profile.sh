#!/usr/bin/env bash
# Profiles the guest (the service's wasm) under Viceroy while it serves PATH, and writes one
# Firefox Profiler profile per request.
#
#   scripts/profile.sh [--requests N] [--interval T] [--header 'Name: value']... [--out DIR]
#                      [--summary] PATH
#
# Builds the service (release, with symbols: the release profile has debug = 1) for the demo
# origin, starts the demo origin and `viceroy serve --profile=guest` on free ports on
# 127.0.0.1, requests PATH N times (default 5, `Accept-Encoding: identity` unless a --header
# says otherwise), stops what it started, and prints the profile files: DIR/<n>-<path>.json
# (default DIR: bench-results/profiles/, ignored by git). --interval is Viceroy's sampling
# period (default 50us; `10us` gives more samples on a fast request). Open one at https://profiler.firefox.com ("Load a
# profile from file"); docs/performance.md says how to read it. The module is built as it
# ships, with SIMD (.cargo/config.toml; docs/deploy.md, "SIMD", for the switch without it).
# --summary also prints where the time went over all the requests (scripts/profile_summary.py:
# the share of samples per part of a request, and the top functions).
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$ROOT"
ensure_wasm_target
ensure_viceroy

REQUESTS=5
SUMMARY=0
INTERVAL=""
OUT="$ROOT/bench-results/profiles"
HEADERS=()
PATH_ARG=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --requests) REQUESTS="${2:?--requests needs N}"; shift 2 ;;
    --interval) INTERVAL="${2:?--interval needs a duration such as 10us}"; shift 2 ;;
    --header) HEADERS+=("${2:?--header needs 'Name: value'}"); shift 2 ;;
    --out) OUT="${2:?--out needs DIR}"; shift 2 ;;
    --summary) SUMMARY=1; shift ;;
    -h | --help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) log "unknown option $1"; exit 2 ;;
    *) PATH_ARG="$1"; shift ;;
  esac
done
if [[ -z "$PATH_ARG" || "${PATH_ARG:0:1}" != "/" ]]; then
  log "usage: scripts/profile.sh [--requests N] [--interval T] [--header 'Name: value']... [--out DIR] [--summary] PATH (PATH starts with /)"
  exit 2
fi
if ! [[ "$REQUESTS" =~ ^[1-9][0-9]*$ ]]; then
  log "--requests must be a positive integer"
  exit 2
fi
if ! printf '%s\n' "${HEADERS[@]+"${HEADERS[@]}"}" | grep -qi '^accept-encoding:'; then
  HEADERS+=("Accept-Encoding: identity")
fi

# Overrides from the caller's shell must not leak into this build.
while IFS='=' read -r name _; do unset "$name"; done < <(env | grep '^TRUSTED_SERVER__' || true)

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
# Profiles of an earlier run of the same path would be mistaken for this one's.
slug="$(printf '%s' "$PATH_ARG" | tr -c 'A-Za-z0-9._-' '_' | sed 's/^_*//; s/_*$//')"
slug="${slug:-root}"
rm -f "$OUT"/*-"$slug".json
WORK="$(mktemp -d)"
pids=()
cleanup() {
  trap - EXIT INT TERM
  # Only the processes this script started, by their PIDs.
  for pid in "${pids[@]+"${pids[@]}"}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]+"${pids[@]}"}"; do
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ORIGIN_PORT="$(free_port)"
log "building and starting the demo origin on 127.0.0.1:${ORIGIN_PORT}"
cargo build --quiet --release --locked -p demo-origin
"$ROOT/target/release/demo-origin" --addr "127.0.0.1:${ORIGIN_PORT}" --root "$ROOT/fixtures/site" \
  >/dev/null 2>"$WORK/origin.log" &
pids+=($!)

log "building the service (release, wasm32-wasip1, with symbols) for that origin"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
[[ "$TARGET_DIR" == /* ]] || TARGET_DIR="$ROOT/$TARGET_DIR"
TRUSTED_SERVER__PUBLISHER__ORIGIN_URL="http://127.0.0.1:${ORIGIN_PORT}" \
  TRUSTED_SERVER__PUBLISHER__ORIGIN_HOST="origin.demo-publisher.example" \
  cargo build --quiet --release --locked --target wasm32-wasip1 --bin trusted-server-edge
# Copy at once: another build in the same target directory may replace the module.
cp "$TARGET_DIR/wasm32-wasip1/release/trusted-server-edge.wasm" "$WORK/service.wasm"
log "built with SIMD: $(wasm_simd "$WORK/service.wasm")"
wait_http "$ORIGIN_PORT" / 30

PORT="$(free_port)"
log "starting viceroy serve --profile=guest on 127.0.0.1:${PORT}"
viceroy serve -C "$ROOT/fastly.toml" --addr "127.0.0.1:${PORT}" \
  "--profile=guest,$WORK/guest-profiles${INTERVAL:+,$INTERVAL}" "$WORK/service.wasm" >"$WORK/viceroy.log" 2>&1 &
pids+=($!)
if ! wait_http "$PORT" /_ts/health 120; then
  cat "$WORK/viceroy.log" >&2
  exit 1
fi
# The health checks above were profiled too; start counting from here.
rm -rf "$WORK/guest-profiles"
mkdir -p "$WORK/guest-profiles"

log "requesting ${PATH_ARG} ${REQUESTS} times"
curl_headers=()
for h in "${HEADERS[@]}"; do curl_headers+=(-H "$h"); done
for ((i = 1; i <= REQUESTS; i++)); do
  code="$(curl -sS -o /dev/null -w '%{http_code}' --max-time 60 "${curl_headers[@]}" \
    "http://127.0.0.1:${PORT}${PATH_ARG}")"
  printf '  request %d: HTTP %s\n' "$i" "$code" >&2
done

# Viceroy writes a request's profile when the request ends; give the last one a moment.
for ((i = 0; i < 50; i++)); do
  count="$(find "$WORK/guest-profiles" -type f | wc -l)"
  [[ "$count" -ge "$REQUESTS" ]] && break
  sleep 0.1
done
kill -TERM "${pids[1]}" 2>/dev/null || true
wait "${pids[1]}" 2>/dev/null || true

written=()
n=0
while IFS= read -r file; do
  n=$((n + 1))
  dest="$OUT/${n}-${slug}.json"
  cp "$file" "$dest"
  written+=("$dest")
done < <(find "$WORK/guest-profiles" -type f | sort)
if [[ ${#written[@]} -eq 0 ]]; then
  log "viceroy wrote no profile; its log:"
  cat "$WORK/viceroy.log" >&2
  exit 1
fi
log "${#written[@]} guest profile(s) for ${PATH_ARG}; open one at https://profiler.firefox.com (\"Load a profile from file\"):"
printf '%s\n' "${written[@]}"
if [[ "$SUMMARY" == 1 ]]; then
  python3 "$ROOT/scripts/profile_summary.py" "${written[@]}"
fi
