#!/usr/bin/env bash
# Shared set-up for scripts/serve.sh, scripts/test.sh and scripts/benchmark.sh. Source it.
# Installs only what is missing: the wasm32-wasip1 target, Viceroy (pinned; building it takes
# ~14 minutes on 2 cores, so it is skipped when the right version is on PATH) and the Fastly CLI
# from npm (into .tools/, not globally), and builds the demo page's Prebid.js bundle (js/prebid,
# pinned npm packages). `setup_all browser` also installs what the browser test needs: Debian's
# chromium and playwright-core from npm (into .tools/).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VICEROY_VERSION="0.22.0"
FASTLY_CLI_VERSION="16.1.0"
PLAYWRIGHT_CORE_VERSION="1.65.1"
export PATH="$HOME/.cargo/bin:$ROOT/.tools/node_modules/.bin:$PATH"

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

ensure_wasm_target() {
  if ! rustup target list --installed | grep -qx wasm32-wasip1; then
    log "adding the wasm32-wasip1 target"
    rustup target add wasm32-wasip1
  fi
  # .cargo/config.toml builds wasm with SIMD (+simd128); these variables replace its flags.
  if [[ -n "${RUSTFLAGS:-}${CARGO_ENCODED_RUSTFLAGS:-}" ]]; then
    log "warning: RUSTFLAGS/CARGO_ENCODED_RUSTFLAGS is set: it replaces .cargo/config.toml's" \
      "wasm flags, so the wasm build has no SIMD unless it asks for +simd128 (docs/deploy.md, \"SIMD\")"
  fi
}

# The switch that builds wasm without SIMD (docs/deploy.md, "SIMD"): Cargo appends this
# variable's flags to .cargo/config.toml's +simd128, and the last target-feature wins.
NO_SIMD_RUSTFLAGS="-C target-feature=-simd128"

# Usage: wasm_simd FILE. Prints `yes` if the module's target_features section (written by the
# linker: the features the code was compiled with) lists simd128 as used, `no` otherwise; fails
# if FILE is not a wasm module. The section names what the compiler was allowed to use; the
# benchmark's throughput tool also prints cfg!(target_feature = "simd128") from inside a build.
wasm_simd() {
  python3 - "$1" <<'PY'
import sys

data = open(sys.argv[1], "rb").read()
if data[:4] != b"\0asm":
    sys.exit(f"{sys.argv[1]}: not a wasm module")

def leb(pos):
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos

pos, features = 8, None
while pos < len(data):
    section, pos = data[pos], pos + 1
    size, pos = leb(pos)
    end = pos + size
    if section == 0:
        name_len, p = leb(pos)
        if data[p : p + name_len] == b"target_features":
            p += name_len
            count, p = leb(p)
            features = []
            for _ in range(count):
                prefix = chr(data[p])
                n, p = leb(p + 1)
                features.append(prefix + data[p : p + n].decode())
                p += n
    pos = end
if features is None:
    sys.exit(f"{sys.argv[1]}: no target_features section")
print("yes" if "+simd128" in features else "no")
PY
}

ensure_viceroy() {
  if viceroy --version 2>/dev/null | grep -q " ${VICEROY_VERSION}\$"; then
    return
  fi
  log "installing viceroy ${VICEROY_VERSION} (about 14 minutes on 2 cores)"
  cargo install viceroy --locked --version "${VICEROY_VERSION}"
}

ensure_fastly_cli() {
  if fastly version 2>/dev/null | grep -q "v${FASTLY_CLI_VERSION} "; then
    return
  fi
  log "installing the Fastly CLI ${FASTLY_CLI_VERSION} from npm into .tools/"
  npm install --silent --no-audit --no-fund --prefix "$ROOT/.tools" "@fastly/cli@${FASTLY_CLI_VERSION}" >&2
}

# For crates/e2e/tests/browser.rs (tests/browser/nextjs.mjs): Debian's /usr/bin/chromium, and
# playwright-core (pinned) in .tools/node_modules, where the script looks for it.
ensure_browser() {
  if [[ ! -x /usr/bin/chromium ]]; then
    log "installing Debian's chromium"
    local sudo=()
    if [[ "$(id -u)" -ne 0 ]]; then sudo=(sudo); fi
    "${sudo[@]}" apt-get update -qq >&2
    "${sudo[@]}" apt-get install -y chromium >&2
  fi
  if ! grep -qs "\"version\": \"${PLAYWRIGHT_CORE_VERSION}\"" \
    "$ROOT/.tools/node_modules/playwright-core/package.json"; then
    log "installing playwright-core ${PLAYWRIGHT_CORE_VERSION} from npm into .tools/"
    npm install --silent --no-audit --no-fund --save-exact --prefix "$ROOT/.tools" \
      "playwright-core@${PLAYWRIGHT_CORE_VERSION}" >&2
  fi
}

# For fixtures/site/auction.html: Prebid.js (core + prebidServerBidAdapter) from the pinned npm
# packages in js/prebid, bundled by its pinned esbuild into fixtures/site/_gen/prebid.js
# (gitignored), which the demo origin serves as /_gen/prebid.js. `npm ci` runs when the
# packages are missing or the lockfile is newer than what was installed; the build runs when the
# bundle is missing or older than the lockfile, the entry or the build script.
PREBID_BUNDLE="$ROOT/fixtures/site/_gen/prebid.js"
ensure_prebid_bundle() {
  local dir="$ROOT/js/prebid" input
  if [[ ! -f "$dir/node_modules/.package-lock.json" \
    || "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]]; then
    log "installing the pinned Prebid.js and esbuild into js/prebid (npm ci)"
    npm ci --silent --no-audit --no-fund --prefix "$dir" >&2
  fi
  for input in "$dir/package-lock.json" "$dir/src/prebid.js" "$dir/build.mjs" ""; do
    if [[ -z "$input" ]]; then return; fi
    if [[ ! -f "$PREBID_BUNDLE" || "$input" -nt "$PREBID_BUNDLE" ]]; then break; fi
  done
  log "building the Prebid.js bundle (fixtures/site/_gen/prebid.js)"
  node "$dir/build.mjs" "$PREBID_BUNDLE" >&2
}

# For scripts/verify_signature.py (the independent RFC 9421 verifier the signing tests use):
# Python's `cryptography`, pinned, in a virtual environment under .tools/python, only when the
# system Python cannot import it. The tests use .tools/python/bin/python3 when it exists.
CRYPTOGRAPHY_VERSION="48.0.0"
ensure_python_cryptography() {
  if python3 -c 'import cryptography' 2>/dev/null \
    || "$ROOT/.tools/python/bin/python3" -c 'import cryptography' 2>/dev/null; then
    return
  fi
  log "installing cryptography ${CRYPTOGRAPHY_VERSION} into .tools/python (a venv)"
  python3 -m venv "$ROOT/.tools/python"
  "$ROOT/.tools/python/bin/pip" install --quiet "cryptography==${CRYPTOGRAPHY_VERSION}" >&2
}

# Usage: setup_all [browser]. What every script needs, plus the named extras.
setup_all() {
  ensure_wasm_target
  ensure_viceroy
  ensure_fastly_cli
  ensure_python_cryptography
  ensure_prebid_bundle
  local extra
  for extra in "$@"; do
    case "$extra" in
      browser) ensure_browser ;;
      *)
        log "setup_all: unknown extra '${extra}'"
        return 1
        ;;
    esac
  done
}

# Prints a free TCP port on 127.0.0.1 (the kernel picks it; a small race is acceptable).
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# Waits until http://127.0.0.1:$1$2 answers, for at most $3 seconds.
wait_http() {
  local port="$1" path="$2" limit="${3:-60}" i
  for ((i = 0; i < limit * 10; i++)); do
    if curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:${port}${path}" 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  log "nothing answered on 127.0.0.1:${port}${path} within ${limit}s"
  return 1
}
