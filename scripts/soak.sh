#!/usr/bin/env bash
# Usage: scripts/soak.sh [MINUTES] (default 10; fractions allowed, e.g. 0.5).
#
# A bounded soak: builds the demo origin and two builds of the service (streaming and
# buffered), starts them under Viceroy on free loopback ports, and runs a mixed load against
# both for MINUTES (good, dripped, dying, gzip / br / deflate, truncated and Next.js pages).
# Fails on any complete-but-wrong body, any error that is not an expected abandon, a guest
# panic, or Viceroy memory that grows. Everything it starts is stopped when it ends.
# Extra arguments go to the driver (crates/e2e/examples/soak.rs): --threads N, --seed S.
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$ROOT"

minutes="${1:-10}"
if [[ $# -gt 0 ]]; then shift; fi
if ! [[ "$minutes" =~ ^[0-9]+([.][0-9]+)?$ ]]; then
  log "soak: MINUTES must be a number, got '${minutes}'"
  exit 2
fi

setup_all

# Build scripts must not pick up a developer's overrides: the driver sets its own.
while IFS='=' read -r name _; do unset "$name"; done < <(env | grep '^TRUSTED_SERVER__' || true)

log "building the soak driver"
cargo build --quiet --locked --release -p e2e --example soak
target="${CARGO_TARGET_DIR:-$ROOT/target}"
[[ "$target" = /* ]] || target="$ROOT/$target"

log "soak: ${minutes} min against the streaming and buffered builds"
# The driver stops by itself after MINUTES (plus at most one request timeout); the outer limit
# only guards against a hang in set-up (builds included); it signals the whole process group,
# so the servers the driver started go too.
limit=$(python3 -c "import sys; print(int(float(sys.argv[1]) * 60) + 1200)" "$minutes")
timeout --kill-after=30 "$limit" \
  "$target/release/examples/soak" --minutes "$minutes" "$@"
