#!/usr/bin/env bash
# Side-by-side benchmark, offline, on loopback: direct origin vs streaming proxy vs buffered
# proxy (latency with three timestamps, streamed fraction), pipeline vs bare lol_html and wasm
# vs native (throughput), proxy vs origin under wrk load, and the auction endpoint against the
# demo bidders (overhead beyond the slowest bidder, the deadline, guest CPU), and the navigation
# auction (a page's first and last byte, auction on against off); --ids-only measures the
# partner-ID graph's cost instead (kept against off, two more builds); --guest-only measures
# guest time per request instead, today's build in two processes (the A/A control) and, with
# --baseline-rev REV, the build of git revision REV in a third, interleaved. Builds and starts
# everything it needs and stops it again. Ends with a ---RESULTS--- block of key=value lines. The wasm builds
# have SIMD, as they ship (.cargo/config.toml); the throughput tool is also built without it
# (into target/nosimd) for the edge_wasm_nosimd_* keys (docs/performance.md).
#
#   scripts/benchmark.sh [--quick] [--save NAME] [--compare NAME] [--out DIR]
#       [--first-party-only | --cache-only | --auction-only | --navigation-only | --ids-only
#        | --guest-only [--baseline-rev REV]] [--system-roots]
#
# --quick takes about 8 minutes on a 2-core machine once the tools are built (full run: ~18).
# Results, logs and latency.svg go to bench-results/ (or --out DIR); --save NAME keeps this
# run's results in bench-results/runs/NAME.results for a later --compare NAME.
#
# Remote mode: measures a service that is already running (http:// only), and optionally a
# second one against it, interleaved; starts nothing (its chart is remote-latency.svg):
#
#   scripts/benchmark.sh --target URL [--baseline URL] [--paths /a,/b] [--samples N]
#       [--warmup N] [--load SECONDS] [--connections N] [--header 'Name: value']...
#       [--host NAME] [--idle-gap SECONDS] [--timeout SECONDS] [--save NAME] [--compare NAME]
#       [--out DIR]
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$ROOT"
# --baseline-rev names the build --guest-only times against; alone it would be ignored.
if [[ " $* " == *" --baseline-rev "* && " $* " != *" --guest-only "* ]]; then
  echo "benchmark.sh: --baseline-rev REV goes with --guest-only" >&2
  exit 2
fi
for arg in "$@"; do
  if [[ "$arg" == "--target" ]]; then
    # Nothing to build or start but the tool; without wrk, --load is skipped with a note.
    cargo build --quiet --release --locked -p ts-bench --bin bench
    exec "$ROOT/target/release/bench" "$@"
  fi
done
setup_all
if ! command -v wrk >/dev/null; then
  log "installing wrk (Debian package)"
  if [[ $(id -u) -eq 0 ]]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get install -y wrk >/dev/null 2>&1 || { $SUDO apt-get update >/dev/null && $SUDO apt-get install -y wrk >/dev/null; }
fi
# Overrides from the caller's shell must not leak into the builds under test.
while IFS='=' read -r name _; do unset "$name"; done < <(env | grep '^TRUSTED_SERVER__' || true)
cargo build --quiet --release --locked -p ts-bench --bin bench
exec "$ROOT/target/release/bench" "$@"
