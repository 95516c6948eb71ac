#!/usr/bin/env bash
# Installs what building and testing stormguard needs and is missing, and
# nothing else. A second run is a no-op that takes seconds. Both README
# commands (npm start, npm test) and .ci/run call it first.
set -euo pipefail
cd "$(dirname "$0")/.."

WASM_BINDGEN_VERSION=0.2.130   # must equal the `=` pin in Cargo.toml
WASM_PACK_VERSION=0.15.1
say() { printf '[setup] %s\n' "$*"; }

# 1. The wasm target of the machine's one Rust toolchain.
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

# 1b. Its library sources: the release build compiles std for the wasm with
#     panics as a bare trap (scripts/release-wasm.mjs, 4.8 KB gzip smaller).
if [ ! -f "$(rustc --print sysroot)/lib/rustlib/src/rust/library/std/Cargo.toml" ]; then
  say "adding the rust-src component"
  rustup component add rust-src
fi

# 2. wasm-bindgen CLI (and its test runner) at exactly the crate's version.
#    (`--locked` fails here: the registry lacks some locked versions.)
if [ "$(wasm-bindgen --version 2>/dev/null || true)" != "wasm-bindgen $WASM_BINDGEN_VERSION" ]; then
  say "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (about 4 minutes)"
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
fi

# 3. Chromium and its driver from Debian (no tool may download a browser here).
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    say "installing chromium and chromium-driver with apt"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  else
    echo "[setup] chromium and chromedriver are missing and this is not root." >&2
    echo "[setup] run: sudo apt-get install -y chromium chromium-driver" >&2
    exit 1
  fi
fi

# 4. The second engine: Firefox ESR from Debian, geckodriver from crates.io.
if ! command -v firefox-esr >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    say "installing firefox-esr with apt"
    [ -n "$(find /var/lib/apt/lists -name '*Packages*' -print -quit 2>/dev/null)" ] || apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq firefox-esr >/dev/null
  else
    echo "[setup] firefox-esr is missing and this is not root: sudo apt-get install -y firefox-esr" >&2
    exit 1
  fi
fi
if ! command -v geckodriver >/dev/null 2>&1; then
  say "installing geckodriver (cargo install, a few minutes)"
  cargo install geckodriver
fi

# 5. wasm-pack, through which `npm test` runs the browser suites and a
#    contributor runs one browser test (README, "Running one test"). From
#    crates.io: the npm package `wasm-pack` downloads a prebuilt binary, which
#    fails here. It downloads nothing itself as long as the wasm-bindgen above
#    (Cargo.lock's version) and chromedriver/geckodriver are on PATH.
if [ "$(wasm-pack --version 2>/dev/null || true)" != "wasm-pack $WASM_PACK_VERSION" ]; then
  say "installing wasm-pack $WASM_PACK_VERSION (cargo install: 400 CPU-seconds, 3-4 minutes on 2 idle cores)"
  cargo install wasm-pack --version "$WASM_PACK_VERSION"
fi

# 6. npm packages from the committed lock file (binaryen's wasm-opt,
#    playwright-core, ...). Reinstalled only when the lock file changes.
lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -d node_modules ] || [ "$(cat node_modules/.stormguard-lock 2>/dev/null || true)" != "$lock_sum" ]; then
  say "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_sum" > node_modules/.stormguard-lock
fi
