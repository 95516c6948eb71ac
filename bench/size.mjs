// Size as an app ships it: each library bundled by esbuild from an entry that
// imports what the benchmark's strategy uses (--bundle --minify --format=esm,
// browser platform), plus stormguard's .wasm beside its bundle. Raw, gzip -9
// and brotli -q 11, each file compressed on its own as a server would.
// Then a twiggy breakdown of stormguard's wasm with names kept.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { WASM_OPT_ARGS } from '../scripts/wasm-opt.mjs';
import { buildReleaseWasm } from '../scripts/release-wasm.mjs';
import { minifyNames } from '../scripts/minify-names.mjs';
import { benchDir, buildDir, root } from './lib.mjs';

/** Issue 19's target for what the package ships (wasm + JS as bundled), gzip; the 30 KB of issue 7 was withdrawn. */
export const SIZE_TARGET_GZIP = 60 * 1024;

export const SIZE_ENTRIES = {
  stormguard: `export { createClient, isStormguardError, HttpError, TimeoutError, CircuitOpenError } from '../../pkg/index.js';`,
  ky: `export { default } from 'ky';`,
  cockatiel:
    `export { retry, circuitBreaker, wrap, handleAll, ExponentialBackoff, ConsecutiveBreaker, timeout, TimeoutStrategy } from 'cockatiel';`,
  ofetch: `export { ofetch } from 'ofetch';`,
  axios: `export { default } from 'axios';`,
};

const sizes = (buf) => ({
  raw: buf.length,
  gzip: gzipSync(buf, { level: 9 }).length,
  brotli: brotliCompressSync(buf, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).length,
});
const add = (a, b) => ({ raw: a.raw + b.raw, gzip: a.gzip + b.gzip, brotli: a.brotli + b.brotli });

/** esbuild bundle of one entry source; returns the minified code. */
export async function bundle(source, { minify = true, globalName } = {}) {
  const esbuild = await import('esbuild');
  // esbuild resolves the entry's relative imports from this folder, which a fresh clone lacks
  // (scripts/build.mjs's size budget bundles before any benchmark has made it).
  mkdirSync(buildDir, { recursive: true });
  const out = await esbuild.build({
    stdin: { contents: source, resolveDir: buildDir, sourcefile: 'entry.mjs', loader: 'js' },
    bundle: true,
    minify,
    format: globalName ? 'iife' : 'esm',
    globalName,
    platform: 'browser',
    target: 'es2022',
    write: false,
    logLevel: 'silent',
  });
  return Buffer.from(out.outputFiles[0].contents);
}

/**
 * What the stormguard package weighs as an app ships it: the bundle of its
 * entry (SIZE_ENTRIES) and pkg/'s .wasm, each compressed on its own. The size
 * table below and the size budget of scripts/build.mjs both count this.
 */
export async function shippedStormguard(js) {
  js ??= await bundle(SIZE_ENTRIES.stormguard);
  const parts = { js: sizes(js), wasm: sizes(readFileSync(join(root, 'pkg/stormguard_bg.wasm'))) };
  return { parts, total: add(parts.js, parts.wasm) };
}

async function versionOf(name) {
  if (name === 'stormguard') return JSON.parse(readFileSync(join(root, 'pkg/package.json'), 'utf8')).version;
  return JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version;
}

export const bundlesDir = join(buildDir, 'size');

/**
 * Writes bench/.build/size/<name>.min.js for every library (and stormguard_bg.wasm beside
 * stormguard's bundle, where its `new URL('stormguard_bg.wasm', import.meta.url)` finds it).
 * The browser benchmarks load these same files.
 */
export async function buildBundles() {
  mkdirSync(bundlesDir, { recursive: true });
  const out = {};
  for (const [name, entry] of Object.entries(SIZE_ENTRIES)) {
    if (name === 'stormguard' && !existsSync(join(root, 'pkg/stormguard_bg.wasm'))) continue;
    const js = await bundle(entry);
    writeFileSync(join(bundlesDir, `${name}.min.js`), js);
    out[name] = js;
  }
  if (out.stormguard) copyFileSync(join(root, 'pkg/stormguard_bg.wasm'), join(bundlesDir, 'stormguard_bg.wasm'));
  return out;
}

/**
 * Builds to compare side by side: `--pkg=before=/tmp/pkg-before` (label=folder, comma-separated) from a
 * benchmark's arguments, as `[{ label, dir }]`; the folder is a built `pkg/` (`node scripts/build.mjs` at
 * another commit, copied aside). The label names the build's rows (`stormguard@before`).
 */
export function pkgsFromArgs(args) {
  const a = args.find((x) => x.startsWith('--pkg='));
  if (!a) return [];
  return a.slice('--pkg='.length).split(',').filter(Boolean).map((item) => {
    const i = item.indexOf('=');
    const label = item.slice(0, i);
    const dir = item.slice(i + 1);
    if (i < 1 || !/^[\w.-]+$/.test(label)) throw new Error(`--pkg: ${item} is not label=folder`);
    if (!existsSync(join(dir, 'index.js')) || !existsSync(join(dir, 'node.js')) || !existsSync(join(dir, 'stormguard_bg.wasm'))) {
      throw new Error(`--pkg: ${dir} is not a built package (index.js, node.js, stormguard_bg.wasm)`);
    }
    return { label, dir };
  });
}

/** The folder of a package's page bundle (bundlePkg): `now` is this checkout's pkg/. */
export const pkgBundleDir = (label) => join(buildDir, 'pkgs', label);

/**
 * bench/.build/pkgs/<label>/stormguard.min.js, the browser entry of the package in `dir` bundled as
 * an app ships it (createClient and createClientSync), with its .wasm beside: what the start-up and
 * overhead pages load for a build (`stormguard@<label>`; `now` for pkg/).
 */
export async function bundlePkg(label, dir = join(root, 'pkg')) {
  const out = pkgBundleDir(label);
  mkdirSync(out, { recursive: true });
  const js = await bundle(`export { createClient, createClientSync } from ${JSON.stringify(join(dir, 'index.js'))};`);
  writeFileSync(join(out, 'stormguard.min.js'), js);
  copyFileSync(join(dir, 'stormguard_bg.wasm'), join(out, 'stormguard_bg.wasm'));
  return out;
}

export async function measureSizes({ log = console.log } = {}) {
  const bundles = await buildBundles();
  const libs = [];
  for (const [name, js] of Object.entries(bundles)) {
    const { parts, total } = name === 'stormguard' ? await shippedStormguard(js) : { parts: { js: sizes(js) }, total: sizes(js) };
    libs.push({ name, version: await versionOf(name), entry: SIZE_ENTRIES[name], parts, total });
  }
  for (const l of libs) log(`[size] ${l.name.padEnd(10)} ${(l.total.raw / 1024).toFixed(1)} KB raw, ${(l.total.gzip / 1024).toFixed(1)} KB gzip, ${(l.total.brotli / 1024).toFixed(1)} KB brotli`);
  return { libs, targetGzipBytes: SIZE_TARGET_GZIP };
}

// ---- twiggy

function has(cmd) {
  try {
    execFileSync(cmd, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const NOT_SHIPPED = 'names, custom sections (not shipped)';

/** What an item of the wasm belongs to: its crate, or a part of the module's structure. */
function crateOf(name) {
  if (/names" subsection|^custom section/.test(name)) return NOT_SHIPPED;
  if (/shim|^__wbg|^__wbindgen|^client_|^__externref|^closure\d/.test(name)) return 'wasm-bindgen exports and shims';
  if (name.startsWith('data segment')) return 'data (.rodata)';
  if (name.startsWith('import ')) return 'imports (JS functions)';
  if (/^(export |type\[|elem\[|table\[|memory\[|global\[|wasm magic|code section|data section|start )/.test(name)) {
    return 'module structure (types, tables, exports)';
  }
  if (/^code\[\d+\]$/.test(name)) return 'unnamed functions';
  const m = /([A-Za-z_][A-Za-z0-9_]*)(?:\[[0-9a-f]+\])?::/.exec(name);
  const c = m ? m[1] : /^<(str|\[T\])>/.test(name) ? 'core' : name.replace(/\W.*$/, '');
  if (['core', 'alloc', 'std', '__rustc', 'dlmalloc', 'compiler_builtins', 'hashbrown', 'memcmp', 'memcpy', 'memset', 'memmove', 'fmin', 'fmax'].includes(c)) {
    return 'Rust std (core, alloc, dlmalloc, hashbrown)';
  }
  if (c === 'stormguard') {
    const sub = /stormguard(?:\[[0-9a-f]+\])?::(\w+)/.exec(name);
    return sub ? `stormguard::${sub[1]}` : 'stormguard';
  }
  if (['wasm_bindgen', 'js_sys', 'web_sys', 'wasm_bindgen_futures', 'gloo_timers', 'getrandom'].includes(c)) return c;
  return 'other';
}

/**
 * twiggy over the same build as pkg/ (cargo release build, wasm-bindgen, wasm-opt -Oz) but with
 * the name section kept (wasm-opt -g), so function sizes are those that ship.
 */
export async function twiggyBreakdown({ quick, log = console.log } = {}) {
  if (!has('twiggy')) {
    if (quick) {
      log('[size] twiggy is not installed: the twiggy table is skipped in --quick (the full run installs it)');
      return { skipped: 'twiggy not installed (--quick does not install it)' };
    }
    log('[size] installing twiggy (cargo install twiggy, a few minutes, once)');
    execFileSync('cargo', ['install', 'twiggy'], { stdio: 'inherit' });
  }
  const dir = join(buildDir, 'twiggy');
  mkdirSync(dir, { recursive: true });
  const run = (cmd, args, env) => execFileSync(cmd, args, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });

  // the release build pkg/ is made from (a no-op when it is fresh); names are in it unless stripped
  let src = buildReleaseWasm(root, run, { quiet: true });
  const hasNames = (file) => run('twiggy', ['top', '-n', '100', file]).toString().includes('"function names" subsection');
  if (!hasNames(src)) {
    log('[size] the release wasm has no names: building one with strip off into bench/.target');
    src = buildReleaseWasm(root, run, {
      quiet: true, targetDir: join(benchDir, '.target'), env: { CARGO_PROFILE_RELEASE_STRIP: 'false', CARGO_PROFILE_RELEASE_DEBUG: 'false' },
    });
  }
  run('wasm-bindgen', ['--target', 'web', '--no-typescript', '--out-dir', dir, '--out-name', 'named', src]);
  const named = join(dir, 'named.wasm');
  run(join(root, 'node_modules/.bin/wasm-opt'), [...WASM_OPT_ARGS, '-g', '--strip-dwarf', join(dir, 'named_bg.wasm'), '-o', named]);
  // the import and export names as shipped (scripts/minify-names.mjs), the function names kept
  minifyNames(join(root, 'node_modules/.bin/wasm-opt'), named, readFileSync(join(dir, 'named.js'), 'utf8'), { keepNames: true });
  const rows = JSON.parse(run('twiggy', ['top', '-n', '100000', '--format', 'json', named]).toString());
  const items = rows.filter((r) => !/^(\.\.\.|Σ)/.test(r.name)).map((r) => ({ name: r.name, bytes: r.shallow_size }));
  const names = items.filter((r) => crateOf(r.name) === NOT_SHIPPED).reduce((s, r) => s + r.bytes, 0);
  const code = items.filter((r) => crateOf(r.name) !== NOT_SHIPPED);
  const shipped = code.reduce((s, r) => s + r.bytes, 0);
  const byCrate = {};
  for (const r of code) byCrate[crateOf(r.name)] = (byCrate[crateOf(r.name)] ?? 0) + r.bytes;
  const shortName = (n) => n.replace(/::h[0-9a-f]{16}$/, '').replace(/\[[0-9a-f]{16}\]/g, '');
  return {
    version: run('twiggy', ['--version']).toString().trim().replace(/^twiggy(-opt)?\s*/, ''),
    source: src.replace(root + '/', ''),
    namedWasmBytes: existsSync(named) ? readFileSync(named).length : null,
    nameSectionBytes: names,
    itemsBytes: shipped,
    top: code.slice(0, 20).map((r) => ({ name: shortName(r.name), bytes: r.bytes, share: r.bytes / shipped })),
    byCrate: Object.entries(byCrate).sort((a, b) => b[1] - a[1]).map(([crate, bytes]) => ({ crate, bytes, share: bytes / shipped })),
  };
}
