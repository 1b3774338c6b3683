#!/usr/bin/env bash
# Runs the service on http://127.0.0.1:7676 with `fastly compute serve` (Viceroy from PATH);
# TS_SERVE_ADDR=HOST:PORT serves it elsewhere.
#
# Without TRUSTED_SERVER__PUBLISHER__ORIGIN_URL it first starts the bundled demo origin on
# 127.0.0.1:8080 (pages from fixtures/site), and a demo ad partner on 127.0.0.1:8081 (files
# from fixtures/partner) that first_party.resolve maps ads. and cdn.demo-partner.example to,
# unless TRUSTED_SERVER__FIRST_PARTY__RESOLVE is set. With it, that origin is used instead, and the Host
# sent to it (publisher.origin_host) becomes its host[:port] unless
# TRUSTED_SERVER__PUBLISHER__ORIGIN_HOST is set too. Any other TRUSTED_SERVER__SECTION__KEY
# variable overrides trusted-server.toml for this build. The effective origin URL and host are
# printed first, by the loader the build uses.
# The wasm is built with SIMD (.cargo/config.toml); to build without it, run with
# CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS="-C target-feature=-simd128" (docs/deploy.md, "SIMD").
# Ctrl-C or SIGTERM stops everything this script started.
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$ROOT"
setup_all

ADDR="${TS_SERVE_ADDR:-127.0.0.1:7676}"
pids=()
cleanup() {
  trap - EXIT INT TERM
  # Each child leads its own process group (setsid), so this reaches Viceroy too.
  for pid in "${pids[@]}"; do
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

PARTNER_ADDR=127.0.0.1:8081
demo=0
if [[ -z "${TRUSTED_SERVER__PUBLISHER__ORIGIN_URL:-}" ]]; then
  demo=1
  if [[ -z "${TRUSTED_SERVER__FIRST_PARTY__RESOLVE:-}" ]]; then
    # Development only: the demo partner's names lead to the local demo partner.
    export TRUSTED_SERVER__FIRST_PARTY__RESOLVE="{ \"ads.demo-partner.example\" = \"$PARTNER_ADDR\", \"cdn.demo-partner.example\" = \"$PARTNER_ADDR\" }"
    partner=1
  fi
fi

log "effective origin settings (trusted-server.toml + TRUSTED_SERVER__* variables)"
cargo run --quiet -p trusted-server-settings --features load --bin effective-settings

if [[ $demo == 1 ]]; then
  log "building and starting the demo origin on 127.0.0.1:8080"
  cargo build --release -p demo-origin
  setsid "$ROOT/target/release/demo-origin" --addr 127.0.0.1:8080 --root "$ROOT/fixtures/site" &
  pids+=($!)
  wait_http 8080 / 30
  if [[ ${partner:-0} == 1 ]]; then
    log "starting the demo ad partner on $PARTNER_ADDR (ads. and cdn.demo-partner.example)"
    setsid "$ROOT/target/release/demo-origin" --addr "$PARTNER_ADDR" --root "$ROOT/fixtures/partner" --quiet &
    pids+=($!)
    wait_http 8081 /creative.html 30
  fi
else
  log "using origin ${TRUSTED_SERVER__PUBLISHER__ORIGIN_URL}"
fi

log "building the service"
# The same command as fastly.toml's [scripts].build. Building here and serving with
# --skip-build keeps `fastly compute build` from trying to download wasm-tools (for metadata
# annotations) on every start, which fails offline.
cargo build --bin trusted-server-edge --release --target wasm32-wasip1
log "built with SIMD: $(wasm_simd "$ROOT/target/wasm32-wasip1/release/trusted-server-edge.wasm")"
log "serving on http://${ADDR} (Ctrl-C to stop)"
# Own process group so that a signal reaches the CLI and the Viceroy it starts.
FASTLY_VICEROY_USE_PATH=1 setsid fastly compute serve --non-interactive --skip-build \
  --file "$ROOT/target/wasm32-wasip1/release/trusted-server-edge.wasm" \
  --viceroy-path "$(command -v viceroy)" --addr "$ADDR" &
pids+=($!)
wait "${pids[-1]}"
