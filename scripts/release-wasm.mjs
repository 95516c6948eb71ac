// The release build of the wasm that ships (scripts/build.mjs) and that the
// size benchmark's twiggy table reads (bench/size.mjs): one cargo command,
// written once.
//
// std is compiled with the crate for it (`-Zbuild-std`), with panics as a bare
// trap (`-Cpanic=immediate-abort`) and no file/line text in the binary
// (`-Zlocation-detail=none`). The prebuilt std of the wasm target formats every
// panic's message (RefCell's borrow errors, bounds and unwrap checks, with
// core::fmt behind them) for a hook nobody reads in a browser: `panic = "abort"`
// already ends a panic in an `unreachable` trap, so what a user sees of a panic
// (a RuntimeError: unreachable) does not change. Measured (issue 28, exact gzip -9
// of the wasm after wasm-opt): 95,539 -> 90,736 bytes.
//
// Those are unstable flags of the machine's one, stable toolchain, unlocked for
// this command alone by RUSTC_BOOTSTRAP=1 (no nightly toolchain can be fetched
// on this machine kind); a toolchain change that breaks them breaks this build
// loudly, and STORMGUARD_PLAIN_STD=1 builds with the prebuilt std instead (the
// wasm is then about 4.8 KB gzip larger and over the size budget). It needs the
// toolchain's rust-src component (scripts/setup.sh adds it).
//
// The target's rustflags in .cargo/config.toml (the test builds' too) are kept:
// the flags given here would replace them, so they are read from there.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const SIZE_FLAGS = ['-Zunstable-options', '-Cpanic=immediate-abort', '-Zlocation-detail=none'];

/** The wasm32 rustflags of .cargo/config.toml (one `rustflags = [...]` line). */
function configFlags(root) {
  const config = readFileSync(join(root, '.cargo/config.toml'), 'utf8');
  const line = /^\s*rustflags\s*=\s*(\[.*\])\s*$/m.exec(config);
  if (!line) throw new Error('.cargo/config.toml has no one-line `rustflags = [...]` for scripts/release-wasm.mjs to read');
  return JSON.parse(line[1]);
}

/** True when the toolchain that `cargo` runs has its library sources (rust-src). */
function hasRustSrc(root) {
  const sysroot = execFileSync('rustc', ['--print', 'sysroot'], { cwd: root }).toString().trim();
  return existsSync(join(sysroot, 'lib/rustlib/src/rust/library/std/Cargo.toml'));
}

/**
 * Builds the crate's release wasm; returns its path. `run(cmd, args, env)`
 * runs a command in `root` with `env` added to the environment. The target
 * dir (unless `targetDir`) is one of its own, target/release-std: the flags
 * differ from every other build's, and sharing one would rebuild each time
 * the two alternate; with the prebuilt std it is cargo's own, target/.
 */
export function buildReleaseWasm(root, run, { quiet = false, targetDir, env = {}, features = [] } = {}) {
  const args = ['build', '--release', '--target', 'wasm32-unknown-unknown', '--lib', ...(quiet ? ['--quiet'] : []),
    ...(features.length ? ['--features', features.join(',')] : [])];
  if (process.env.STORMGUARD_PLAIN_STD === '1') {
    const dir = targetDir ?? join(root, 'target');
    run('cargo', [...args, '--target-dir', dir], env);
    return join(dir, 'wasm32-unknown-unknown/release/stormguard.wasm');
  }
  if (!hasRustSrc(root)) {
    throw new Error('the release build compiles std for the wasm (scripts/release-wasm.mjs) and needs the ' +
      "toolchain's library sources: run `rustup component add rust-src` (scripts/setup.sh does), or build " +
      'with the prebuilt std, larger, with STORMGUARD_PLAIN_STD=1');
  }
  const dir = targetDir ?? join(root, 'target/release-std');
  run('cargo', [...args, '-Zbuild-std=std,panic_abort', '-Zbuild-std-features=optimize_for_size', '--target-dir', dir], {
    RUSTC_BOOTSTRAP: '1',
    CARGO_ENCODED_RUSTFLAGS: [...configFlags(root), ...SIZE_FLAGS].join('\x1f'),
    ...env,
  });
  return join(dir, 'wasm32-unknown-unknown/release/stormguard.wasm');
}
