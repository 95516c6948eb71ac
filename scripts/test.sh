#!/usr/bin/env bash
# npm test: every check, in the order a failure is cheapest to find.
# Output ends with the runners' own summary lines.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n== %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --check

step "cargo clippy (native, all targets)"
cargo clippy --all-targets --quiet -- -D warnings
# Every target, as `wasm-pack test` builds them (`cargo build --tests` for
# wasm32): a native-only test dependency used outside its cfg fails here, in
# seconds, not minutes later in the browser step.
step "cargo clippy (wasm32: every target, as wasm-pack test builds them)"
cargo clippy --target wasm32-unknown-unknown --all-targets --quiet -- -D warnings

# Issues 17 and 38's shape: no import cycles in src/, and src/web/ thin (no impl
# over 300 lines, no type's impls together over 450, no function over 80, no
# struct with more than 6 public fields, no inherent impl outside its type's
# module).
step "structure (scripts/structure.mjs)"
node scripts/structure.mjs

step "cargo test (native: policy core, property tests, virtual-time simulation)"
cargo test --quiet

step "npm run build"
node scripts/build.mjs --if-stale

# The package's types as TypeScript resolves them for node10, node16 (CJS and
# ESM) and bundlers. .attw.json leaves out the ./stormguard_bg.wasm subpath (an
# asset, not a module: attw reports "resolution failed" for any non-JS export).
step "are the types wrong (attw --pack pkg)"
node_modules/.bin/attw --pack pkg --format table --no-color --no-emoji

# The fault server every browser and end-to-end test talks to.
tmp=$(mktemp -d)
# --close: Connection: close on every response, so Chromium never retries a
# reset keep-alive connection by itself (tests/server/README.md).
node tests/server/server.mjs --close > "$tmp/server.json" &
server_pid=$!
trap 'kill $server_pid 2>/dev/null || true; rm -rf "$tmp"' EXIT
for _ in $(seq 1 100); do [ -s "$tmp/server.json" ] && break; sleep 0.1; done
STORMGUARD_FAULT_URL=$(node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).url)' "$tmp/server.json")
export STORMGUARD_FAULT_URL
echo "fault server at $STORMGUARD_FAULT_URL"

# The runner's default budget for a whole suite is 20 s; the browser suite
# (holds of rate-limit resets, hedges, stalled bodies) takes about 30 s.
export WASM_BINDGEN_TEST_TIMEOUT=120
# The browser suites through wasm-pack, exactly as a contributor types it
# (README, "Running one test"): it builds every test target for wasm32 and runs
# `cargo test --target wasm32-unknown-unknown` with the wasm-bindgen-test-runner
# and chromedriver/geckodriver it finds on PATH. --mode no-install: were
# wasm-bindgen 0.2.130 or a driver missing from PATH, fail here instead of
# downloading or cargo-installing one.
step "browser tests (wasm-pack test --headless --chrome: Chromium)"
wasm-pack test --mode no-install --headless --chrome
step "browser tests (wasm-pack test --headless --firefox: Firefox ESR)"
wasm-pack test --mode no-install --headless --firefox

step "type tests"; npx tsc --noEmit -p tests/types

step "node tests (fault server, end-to-end in Chromium through playwright-core)"
# --no-turbo-inlining: Node 20.20's V8 hits a deoptimizer fatal error ("unreachable
# code") under the 100k-call test, 3 runs in 3 without it, 0 in 3 with it.
node --expose-gc --no-turbo-inlining --test --test-concurrency=1 tests/server/ tests/e2e/
