#!/usr/bin/env node
// npm run build: release wasm -> wasm-bindgen (web target) -> wasm-opt -Oz
// (scripts/wasm-opt.mjs) ->
// pkg/ with the hand-written wrapper from pkg-template/ and a package.json
// made from its template. Prints the wasm size raw, gzip and brotli.
//
// One wasm-bindgen build (`--target web`) serves every host: plain ESM and
// bundlers load it through `new URL('stormguard_bg.wasm', import.meta.url)`
// (which Vite and webpack 5 understand), and the Node entry instantiates the
// same file from disk. One .wasm in the tarball instead of three.
//
//   node scripts/build.mjs             build
//   node scripts/build.mjs --if-stale  build only if a source is newer than pkg/
import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BOOT_WASM_OPT_ARGS, WASM_OPT_ARGS } from './wasm-opt.mjs';
import { buildReleaseWasm } from './release-wasm.mjs';
import { minifyNames } from './minify-names.mjs';
import { writeNpmReadme } from './npm-readme.mjs';
import { gzipSync, brotliCompressSync, constants } from 'node:zlib';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = join(root, 'pkg');
const template = join(root, 'pkg-template');
const wasmOut = join(pkg, 'stormguard_bg.wasm');

function newestMtime(path) {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  return Math.max(st.mtimeMs, ...readdirSync(path).map((n) => newestMtime(join(path, n))));
}

if (process.argv.includes('--if-stale') && existsSync(join(pkg, 'package.json'))) {
  const sources = ['src', 'pkg-template', 'README.md', 'Cargo.toml', 'Cargo.lock', '.cargo', 'scripts/build.mjs', 'scripts/release-wasm.mjs', 'scripts/minify-names.mjs', 'scripts/wasm-opt.mjs', 'scripts/npm-readme.mjs']
    .map((p) => join(root, p)).filter(existsSync);
  if (Math.max(...sources.map(newestMtime)) < statSync(join(pkg, 'package.json')).mtimeMs) {
    console.log('[build] pkg/ is up to date');
    process.exit(0);
  }
}

const run = (cmd, args, env) => execFileSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });

console.log('[build] cargo build --release --target wasm32-unknown-unknown (std built with it: scripts/release-wasm.mjs)');
const built = buildReleaseWasm(root, run);

rmSync(pkg, { recursive: true, force: true });
mkdirSync(pkg, { recursive: true });
run('wasm-bindgen', [
  '--target', 'web', '--no-typescript', '--out-dir', pkg, '--out-name', 'stormguard',
  built,
]);

// Float formatting (core::fmt::float, flt2dec: about 21 KB raw) must never be
// linked: an f64 formatted anywhere in the crate pulls it in. The names are
// still in the module here (wasm-opt strips them below).
const linked = readFileSync(wasmOut).toString('latin1');
const forbidden = ['flt2dec', 'fmt::float'].filter((name) => linked.includes(name));
if (forbidden.length) {
  console.error(`[build] the wasm links float formatting (${forbidden.join(', ')}): an f64 is formatted ` +
    'somewhere (format!, to_string, {:?} of a float); write it another way (src/text.rs).');
  process.exit(1);
}

const before = statSync(wasmOut).size;
run(join(root, 'node_modules/.bin/wasm-opt'), [...WASM_OPT_ARGS, '--strip-debug', '--strip-producers', '--strip-target-features', wasmOut, '-o', wasmOut]);

// The wasm-bindgen glue as shipped: only what the entries use, minified.
// core.js instantiates the module itself (it compiles while the file
// streams in, from import time in the browser entry), so the glue's own
// loader (`__wbg_init`, its fetch of a URL, its MIME fallback) is dropped;
// it exports the two pieces that loader was made of instead. initSync stays
// for the tests and the memory bench, which reach the instance's exports
// through it (the entries leave it out, so app bundles do too). The glue as
// wasm-bindgen wrote it stays in target/glue/ for reading.
const { build } = await import(join(root, 'node_modules/esbuild/lib/main.js'));
{
  const glueOut = join(pkg, 'stormguard.js');
  const glueDir = join(root, 'target/glue');
  const glueRaw = join(glueDir, 'stormguard.js');
  mkdirSync(glueDir, { recursive: true });
  // The names the module and the glue share, short in both (scripts/minify-names.mjs).
  const raw = minifyNames(join(root, 'node_modules/.bin/wasm-opt'), wasmOut, readFileSync(glueOut, 'utf8'));
  const exportsLine = 'export { initSync, __wbg_init as default };';
  const pieces = ['function __wbg_get_imports()', 'function __wbg_finalize_init(instance, module)', exportsLine];
  const lacking = pieces.filter((p) => !raw.includes(p));
  if (lacking.length) {
    throw new Error(`the wasm-bindgen glue lacks ${lacking.join(', ')}: its loader changed (a new wasm-bindgen?); ` +
      'update the glue step of scripts/build.mjs and instantiate() in pkg-template/core.js together');
  }
  writeFileSync(glueRaw, raw.replace(exportsLine,
    'export { initSync, __wbg_get_imports as imports, __wbg_finalize_init as finish };'));
  rmSync(glueOut);
  // What the wasm imports from JS of its own (src/web/*.js, `#[wasm_bindgen(module)]`) is
  // bundled into the glue: wasm-bindgen left it in pkg/snippets/.
  rmSync(join(glueDir, 'snippets'), { recursive: true, force: true });
  if (existsSync(join(pkg, 'snippets'))) {
    cpSync(join(pkg, 'snippets'), join(glueDir, 'snippets'), { recursive: true });
    rmSync(join(pkg, 'snippets'), { recursive: true });
  }
  // A warning here (a duplicate key, say) is a glue this step broke: not shipped.
  const glueBuild = await build({
    entryPoints: [glueRaw],
    outfile: glueOut,
    bundle: true,
    format: 'esm',
    minify: true,
    banner: { js: '/* stormguard: the wasm-bindgen glue, minified, without its loader (scripts/build.mjs). */' },
    logLevel: 'warning',
  });
  if (glueBuild.warnings.length) throw new Error(`the glue's bundle has ${glueBuild.warnings.length} warning(s) (above)`);
}

// The boot build (issue 39; src/boot.rs): the same crate with the `boot` feature, only a call's first
// attempt, for the calls made before the engine is in. Its module travels inside its glue as hex
// (pkg/stormguard_boot.js, `bytes()`), compiled at the first such call: a file of its own would cost a
// round trip before the first request (measured at 150 ms RTT: 725 ms first data against 588 inlined).
// Hex, not base64: a byte is two whole characters, so gzip still finds the module's repeats (the module
// of 10,520 bytes, 5,069 gzip: 5,577 gzip as hex, 6,621 as base64, after esbuild). Without the async
// loader (`initSync` compiles it at once).
let bootWasm;
{
  console.log('[build] the boot build: cargo build --features boot');
  const bootBuilt = buildReleaseWasm(root, run, { features: ['boot'], targetDir: join(root, 'target/release-boot') });
  const glueDir = join(root, 'target/glue/boot');
  rmSync(glueDir, { recursive: true, force: true });
  run('wasm-bindgen', ['--target', 'web', '--no-typescript', '--out-dir', glueDir, '--out-name', 'stormguard_boot', bootBuilt]);
  const w = join(glueDir, 'stormguard_boot_bg.wasm');
  run(join(root, 'node_modules/.bin/wasm-opt'), [...BOOT_WASM_OPT_ARGS, '--strip-debug', '--strip-producers', '--strip-target-features', w, '-o', w]);
  const glueRaw = join(glueDir, 'stormguard_boot.js');
  const exportsLine = 'export { initSync, __wbg_init as default };';
  // The names it shares with its glue, short in both, as the engine's (scripts/minify-names.mjs).
  const raw = minifyNames(join(root, 'node_modules/.bin/wasm-opt'), w, readFileSync(glueRaw, 'utf8'));
  bootWasm = readFileSync(w);
  if (!raw.includes(exportsLine)) throw new Error("the boot build's glue lacks its exports line: update scripts/build.mjs");
  const bytes = [
    `const hex = ${JSON.stringify(bootWasm.toString('hex'))};`,
    '/** The boot module: its bytes from the hex above (fromHex where the host has it, else a char code loop). */',
    'export function bytes() {',
    '  if (Uint8Array.fromHex) return Uint8Array.fromHex(hex);',
    '  const b = new Uint8Array(hex.length / 2);',
    '  for (let i = 0, c; i < hex.length; i++) {',
    '    c = hex.charCodeAt(i); // a lowercase hex digit: 0-9 are 48-57 (its low 4 bits), a-f 97-102 (low 4 bits + 9)',
    '    b[i >> 1] = (b[i >> 1] << 4) | ((c & 15) + (c >> 6) * 9);',
    '  }',
    '  return b;',
    '}',
  ].join('\n');
  writeFileSync(glueRaw, raw.replace(exportsLine, `export { initSync };\n${bytes}`));
  const bootBuild = await build({
    entryPoints: [glueRaw],
    outfile: join(pkg, 'stormguard_boot.js'),
    bundle: true,
    format: 'esm',
    minify: true,
    banner: { js: "/* stormguard: the boot build's wasm-bindgen glue, minified, its module inlined (scripts/build.mjs). */" },
    logLevel: 'warning',
  });
  if (bootBuild.warnings.length) throw new Error(`the boot glue's bundle has ${bootBuild.warnings.length} warning(s) (above)`);
}

for (const name of readdirSync(template)) {
  if (name !== 'package.json') copyFileSync(join(template, name), join(pkg, name));
}
for (const name of ['LICENSE-MIT', 'LICENSE-APACHE']) copyFileSync(join(root, name), join(pkg, name));
// The npm page: README.md less its contributor-only parts (scripts/npm-readme.mjs).
writeNpmReadme();

// CommonJS builds behind the `require` condition (Jest's default CommonJS
// mode, require() on Node 20.0-20.18, TypeScript `module: node16` CJS
// projects): each ESM entry bundled with core.js and the glue into one file.
// `import.meta.url` becomes this file's own URL; TextDecoder and TextEncoder
// fall back to node:util's where the global has none (Jest's jsdom
// environment), so the glue's module-level decoder does not throw on load.
const cjsBanner = [
  '/* stormguard: CommonJS build of the ESM entry (scripts/build.mjs). */',
  "const __stormguard_url = require('node:url').pathToFileURL(__filename).href;",
  "const { TextDecoder, TextEncoder } = typeof globalThis.TextDecoder === 'function' && typeof globalThis.TextEncoder === 'function' ? globalThis : require('node:util');",
].join('\n');
// The entries over the client's events and `fetch` option (issue 41): plain JS, no wasm, nothing
// of the main entry.
const SIDE_ENTRIES = ['testing', 'devtools', 'otel'];
const SIDE_EXTERNAL = { otel: ['@opentelemetry/api'] };
for (const [entry, external] of [['node', []], ['react', ['react']], ['vue', ['vue']], ...SIDE_ENTRIES.map((e) => [e, SIDE_EXTERNAL[e] ?? []])]) {
  await build({
    entryPoints: [join(pkg, `${entry}.js`)],
    outfile: join(pkg, `${entry}.cjs`),
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    external,
    // The side entries use no import.meta, wasm or text codec, and devtools runs in pages: no banner.
    ...(SIDE_ENTRIES.includes(entry) ? {} : { define: { 'import.meta.url': '__stormguard_url' }, banner: { js: cjsBanner } }),
    logLevel: 'warning',
  });
}
// The CommonJS builds' types: the same declarations as .d.cts files (a
// .d.ts in a "type": "module" package declares an ES module, which a
// CommonJS TypeScript project may not require: TS1479).
for (const entry of ['index', 'react', 'vue', ...SIDE_ENTRIES]) {
  const dts = readFileSync(join(pkg, `${entry}.d.ts`), 'utf8').replaceAll("from './index.js'", "from './index.cjs'");
  writeFileSync(join(pkg, `${entry}.d.cts`), dts);
}
const version = /^version\s*=\s*"([^"]+)"/m.exec(readFileSync(join(root, 'Cargo.toml'), 'utf8'))[1];
const manifest = JSON.parse(readFileSync(join(template, 'package.json'), 'utf8'));
manifest.version = version;
writeFileSync(join(pkg, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');
for (const f of manifest.files) {
  if (!existsSync(join(pkg, f))) throw new Error(`pkg/${f} is listed in files but was not built`);
}

const wasm = readFileSync(wasmOut);
const gz = gzipSync(wasm, { level: 9 }).length;
const br = brotliCompressSync(wasm, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).length;
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
console.log(`[build] pkg/ stormguard ${version}`);
console.log(`[build] wasm: ${kb(before)} before wasm-opt; ${kb(wasm.length)} raw, ${kb(gz)} gzip, ${kb(br)} brotli`);
console.log(`[build] boot wasm: ${kb(bootWasm.length)} raw, ${kb(gzipSync(bootWasm, { level: 9 }).length)} gzip ` +
  `(inlined in stormguard_boot.js as hex: ${kb(gzipSync(readFileSync(join(pkg, 'stormguard_boot.js')), { level: 9 }).length)} gzip with its glue)`);

// The size budget: what an app ships, gzip (bench/size.mjs). Its ledger, and how to raise it: bench/README.md, section "Size ledger".
const SIZE_BUDGET_BYTES = 117_055;
const { shippedStormguard } = await import(join(root, 'bench/size.mjs'));
const shipped = await shippedStormguard();
const sizeLine = `${kb(shipped.total.gzip)} gzip (wasm ${kb(shipped.parts.wasm.gzip)} + JS ${kb(shipped.parts.js.gzip)})`;
if (shipped.total.gzip > SIZE_BUDGET_BYTES) {
  // pkg/ is left for inspection, but not as a finished build `--if-stale` would keep.
  rmSync(join(pkg, 'package.json'));
  console.error(`[build] the package ships ${sizeLine}, ${shipped.total.gzip - SIZE_BUDGET_BYTES} bytes over its ` +
    `budget of ${kb(SIZE_BUDGET_BYTES)} (${SIZE_BUDGET_BYTES} bytes). Make it smaller (\`npm run bench -- --quick --only=size\` ` +
    'prints a twiggy breakdown), or raise SIZE_BUDGET_BYTES in scripts/build.mjs in a commit that says why, with ' +
    'its line in the size ledger of bench/README.md.' +
    (process.env.STORMGUARD_PLAIN_STD === '1' ? ' (STORMGUARD_PLAIN_STD=1 builds with the prebuilt std: about 4.8 KB over by design.)' : ''));
  process.exit(1);
}
console.log(`[build] shipped: ${sizeLine}, ${shipped.total.gzip} bytes; budget ${kb(SIZE_BUDGET_BYTES)} (${SIZE_BUDGET_BYTES} bytes)`);
// What must arrive before a page's first request (issue 39): the browser entry's JS, the boot build's
// module inlined in it. Only the engine's wasm loads behind the first request (its glue is imported
// statically: a Service Worker may not import() at all).
console.log(`[build] critical path: ${kb(shipped.parts.js.gzip)} gzip (${shipped.parts.js.gzip} bytes) of JS, the boot build's ` +
  `module in it; the engine's wasm (${kb(shipped.parts.wasm.gzip)} gzip) loads behind the first request`);
// The side entries (issue 41) are measured apart: none of the main entry's files imports them, and
// they import nothing of it (checked here), so the main entry's shipped bytes above are the same
// whether an app imports them or not; each line says what importing one adds.
for (const entry of SIDE_ENTRIES) {
  const src = readFileSync(join(pkg, `${entry}.js`), 'utf8');
  if (/from '\.\/[^']*'|stormguard_bg\.wasm/.test(src)) {
    throw new Error(`pkg/${entry}.js imports a file of the package: it must stay apart from the main entry (issue 41)`);
  }
  const js = (await build({ entryPoints: [join(pkg, `${entry}.js`)], bundle: true, minify: true, format: 'esm',
    platform: 'browser', target: 'es2022', external: ['@opentelemetry/api'], write: false, logLevel: 'silent' })).outputFiles[0].contents;
  const gzipped = gzipSync(js, { level: 9 }).length;
  console.log(`[build] stormguard/${entry}: ${kb(gzipped)} gzip (${gzipped} bytes) apart; the main entry ships ${shipped.total.gzip} bytes with or without it`);
}

