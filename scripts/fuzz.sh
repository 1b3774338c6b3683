#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for SECONDS each (default 60), from a copy of its
# committed seed corpus (fuzz/corpus/<target>/, which therefore never grows), and prints the
# executions of each. Exits non-zero when any target finds a crash; the input that crashed is
# left in fuzz/artifacts/<target>/ and its path is printed.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# FUZZ_RUNS=N runs N inputs per target instead, with a fixed seed (FUZZ_SEED, default 1): a
# bounded check for scripts/test.sh. libFuzzer is not fully repeatable even with a seed, so it
# can still find something new. Open-ended exploration is the timed mode.
#
# Set-up: the nightly toolchain (rustup, profile minimal) and cargo-fuzz (pinned) are installed
# only when missing. FUZZ_SANITIZER=address builds with AddressSanitizer (slower; the core is
# `forbid(unsafe_code)`, so the default is none). To reproduce a crash:
#   fuzz/target/<host>/release/<target> fuzz/artifacts/<target>/crash-...
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$ROOT/fuzz"

CARGO_FUZZ_VERSION="0.13.2"
SECONDS_PER_TARGET="${1:-60}"
shift || true
ALL_TARGETS=(html flight_html flight_fast rsc js_string decode url_rule settings creative target_url consent_tcf consent_gpp consent_usp auction_request auction_answer ids_sync)
TARGETS=("${@:-${ALL_TARGETS[@]}}")
SANITIZER="${FUZZ_SANITIZER:-none}"

if ! rustup toolchain list | grep -q '^nightly'; then
  log "installing the nightly toolchain (profile minimal)"
  rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version 2>/dev/null | grep -q " ${CARGO_FUZZ_VERSION}\$"; then
  log "installing cargo-fuzz ${CARGO_FUZZ_VERSION}"
  cargo install cargo-fuzz --locked --version "${CARGO_FUZZ_VERSION}"
fi

log "building the fuzz targets (nightly, sanitizer: ${SANITIZER})"
cargo +nightly fuzz build --sanitizer "${SANITIZER}"
HOST="$(rustc +nightly -vV | sed -n 's/^host: //p')"
BIN="$ROOT/fuzz/target/${HOST}/release"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
failed=()
summary=()
for target in "${TARGETS[@]}"; do
  mkdir -p "$WORK/$target" "artifacts/$target"
  cp corpus/"$target"/* "$WORK/$target/"
  dict=()
  if [[ "$target" != settings ]]; then dict=(-dict="$ROOT/fuzz/dict/pipeline.dict"); fi
  if [[ -n "${FUZZ_RUNS:-}" ]]; then
    budget=(-runs="${FUZZ_RUNS}" -seed="${FUZZ_SEED:-1}")
    log "fuzzing ${target}: ${FUZZ_RUNS} inputs, seed ${FUZZ_SEED:-1}"
  else
    budget=(-max_total_time="${SECONDS_PER_TARGET}")
    log "fuzzing ${target} for ${SECONDS_PER_TARGET}s"
  fi
  status=0
  # libFuzzer stops itself after its budget; the outer timeout is only a backstop.
  timeout --kill-after=10 "$((SECONDS_PER_TARGET + 300))" \
    "$BIN/$target" "$WORK/$target" "${dict[@]}" \
    "${budget[@]}" -rss_limit_mb=2048 -timeout=20 -max_len=8192 \
    -print_final_stats=1 -artifact_prefix="$ROOT/fuzz/artifacts/$target/" \
    >"$WORK/$target.log" 2>&1 || status=$?
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$WORK/$target.log" | tail -1)"
  if [[ "$status" -ne 0 ]]; then
    tail -n 60 "$WORK/$target.log" >&2
    artifact="$(sed -n 's/.*Test unit written to //p' "$WORK/$target.log" | tail -1)"
    failed+=("$target")
    summary+=("$(printf '%-10s FAILED (exit %s) after %s executions; input: %s' \
      "$target" "$status" "${runs:-?}" "${artifact:-none written}")")
  else
    summary+=("$(printf '%-10s %12s executions' "$target" "${runs:-?}")")
  fi
done

log "fuzzing summary"
printf '%s\n' "${summary[@]}" >&2
if [[ "${#failed[@]}" -gt 0 ]]; then
  log "crashes in: ${failed[*]} (inputs under fuzz/artifacts/)"
  exit 1
fi
