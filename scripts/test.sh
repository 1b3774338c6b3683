#!/usr/bin/env bash
# Runs every check: formatting, clippy (native and wasm32-wasip1), native unit and property
# tests, the adapter's tests under Viceroy, and end-to-end tests (real Viceroy + demo origin
# on loopback, started and stopped by the tests themselves), and a 30-second soak. Does its own
# set-up first.
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$ROOT"
setup_all browser

# Build scripts must not pick up a developer's overrides: the tests set their own.
while IFS='=' read -r name _; do unset "$name"; done < <(env | grep '^TRUSTED_SERVER__' || true)

log "cargo fmt --check"
cargo fmt --all -- --check

log "clippy (native)"
cargo clippy --workspace --all-targets --locked -- -D warnings
log "clippy (wasm32-wasip1)"
# The core's own tests are native (proptest does not build for wasm); the adapter's run in wasm.
cargo clippy --target wasm32-wasip1 --locked -p trusted-server-core -p trusted-server-settings -- -D warnings
cargo clippy --target wasm32-wasip1 --locked -p trusted-server-edge --all-targets -- -D warnings

log "rustdoc (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked -p trusted-server-core -p trusted-server-settings -p demo-origin -p ts-testkit -p ts-bench
# The adapter is a wasm binary: its docs (every item, a binary's are all private) for its own target.
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked --target wasm32-wasip1 -p trusted-server-edge -p bare-guest

# crates/archcheck (docs/testing.md#architecture): its own tests first (fixture trees it must
# catch or leave alone, and a full read of this tree), then the check itself.
log "architecture: no import cycles, the engine names no stage, phases import no flow"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked -p archcheck
cargo test --locked -q -p archcheck
cargo run --locked -q -p archcheck

log "native unit and property tests"
cargo test --locked -p trusted-server-settings --features load
cargo test --locked -p trusted-server-core -p demo-origin -p ts-bench -p ts-testkit

log "first-party script unit tests (node --test)"
node --test js/tsjs/test/

log "the SSRF table read by a second WHATWG parser, Node's URL (node --test)"
node --test tests/ssrf/

log "the path-spelling table read by Node's URL (node --test)"
node --test tests/paths/

log "consent decoders against the IAB's reference libraries (node --test; pinned npm packages)"
npm ci --silent --no-audit --no-fund --prefix "$ROOT/tests/consent" >&2
cargo build --locked --release -p trusted-server-core --example consent
TS_CONSENT="$ROOT/target/release/examples/consent" node --test tests/consent/

log "price buckets against Prebid.js's own cpmBucketManager (node --test; pinned npm packages)"
npm ci --silent --no-audit --no-fund --prefix "$ROOT/tests/auction" >&2
cargo build --locked --release -p trusted-server-core --example price_buckets
TS_PRICE_BUCKETS="$ROOT/target/release/examples/price_buckets" node --test tests/auction/

log "captured Next.js pages at every split point (release build: gigabytes of rewriting)"
cargo test --locked --release -p trusted-server-core --test nextjs_fixtures

log "independent Flight oracle on the rewriter's output for every captured Next.js response"
cargo build --locked --release -p trusted-server-core --example rewrite
TS_REWRITE="$ROOT/target/release/examples/rewrite" python3 -m pytest -q tests/oracle

log "adapter tests under Viceroy"
cargo test --locked --target wasm32-wasip1 -p trusted-server-edge

# Both ways (docs/deploy.md, "SIMD"): with the switch that builds without SIMD (in its own
# target directory, so the two builds do not replace each other's artifacts), then as it
# ships, with SIMD, which leaves pkg/ as the package to deploy. Each module must say what it
# was built with (its target_features section).
log "package without SIMD (CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS=\"$NO_SIMD_RUSTFLAGS\"): fastly compute build, then fastly compute validate (offline)"
CARGO_TARGET_DIR="$ROOT/target/nosimd" CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS="$NO_SIMD_RUSTFLAGS" \
  FASTLY_VICEROY_USE_PATH=1 fastly compute build --non-interactive --metadata-disable
fastly compute validate --non-interactive --package "$ROOT/pkg/trusted-server-edge.tar.gz"
[[ "$(wasm_simd "$ROOT/bin/main.wasm")" == no ]] || { log "bin/main.wasm has SIMD"; exit 1; }
log "package with SIMD, as it ships: fastly compute build, then fastly compute validate (offline)"
FASTLY_VICEROY_USE_PATH=1 fastly compute build --non-interactive --metadata-disable
fastly compute validate --non-interactive --package "$ROOT/pkg/trusted-server-edge.tar.gz"
[[ "$(wasm_simd "$ROOT/bin/main.wasm")" == yes ]] || { log "bin/main.wasm has no SIMD"; exit 1; }

# Every test binary of the e2e package: the scenarios against the demo origin (tests/e2e.rs),
# the fault matrix against a scripted raw origin (tests/faults.rs) and the browser check.
log "end-to-end tests and the fault matrix (Viceroy + demo / raw origin on loopback)"
cargo test --locked -p e2e -- --nocapture

# A short soak (scripts/soak.sh alone runs 10 minutes; see docs/testing.md).
log "soak: 30 s of mixed load against both builds (scripts/soak.sh 0.5)"
"$ROOT/scripts/soak.sh" 0.5

log "coverage-guided fuzzing: 10,000 inputs per fuzz/ target from its seed corpus, fixed seed (scripts/fuzz.sh)"
FUZZ_RUNS=10000 scripts/fuzz.sh

# scripts/benchmark.sh --target/--baseline, bounded (5 samples, 1 s of wrk), against the
# streaming and buffered builds started as the benchmark starts them; checks the RESULTS block.
log "remote benchmark mode: --target streaming --baseline buffered (crates/bench/tests/remote.rs)"
cargo test --locked -p ts-bench --test remote -- --ignored --nocapture

log "guest profile under Viceroy (scripts/profile.sh): a Firefox Profiler file naming our functions"
profile_dir="$(mktemp -d)"
scripts/profile.sh --requests 2 --out "$profile_dir" /__gen/1024kb.html >"$profile_dir/list"
python3 - "$profile_dir/list" <<'PY'
import json, sys
files = open(sys.argv[1]).read().split()
assert len(files) == 2, f"expected 2 profiles, got {files}"
for f in files:
    profile = json.load(open(f))
    names = [s for t in profile["threads"] for s in t["stringArray"]]
    ours = [n for n in names if n.startswith(("trusted_server_core::", "<trusted_server_core::"))]
    assert profile["threads"][0]["samples"]["length"] > 0, f"{f}: no samples"
    assert any("trusted_server_edge::main" in n for n in names), f"{f}: no trusted_server_edge::main"
    assert any("::body::pipeline::" in n for n in ours), f"{f}: no pipeline function among {ours[:10]}"
    print(f"{f}: {len(ours)} trusted_server_core functions, e.g. {ours[0]}")
PY
rm -rf "$profile_dir"

log "all checks passed"
