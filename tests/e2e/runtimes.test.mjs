// README, "Bun, Deno, Cloudflare Workers and bundled servers" (issue 40, items 2-3): where the wasm module is read from outside a browser, and
// what a user is told when it cannot be. Each case runs in a child process (a realm loads its module
// once). Deno and Bun run where their binaries are found (STORMGUARD_DENO / STORMGUARD_BUN, else
// node_modules/.bin, else PATH; both install from npm: `npm i deno bun`); elsewhere those cases are
// skipped with the reason printed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync, copyFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../server/server.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));
const pkg = join(root, 'pkg');

let server;
let tmp;
before(async () => {
  server = await startServer();
  tmp = mkdtempSync(join(tmpdir(), 'stormguard-runtimes-'));
});
after(async () => {
  await server?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** Runs `cmd args` in `cwd`; its stdout's last line as JSON. */
function run(cmd, args, cwd) {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { cwd, timeout: 60000, env: { ...process.env, NO_COLOR: '1' } }, (err, stdout, stderr) => {
      const last = stdout.trim().split('\n').at(-1);
      try {
        resolve(JSON.parse(last));
      } catch {
        reject(new Error(`${cmd} ${args.join(' ')}: ${err?.message ?? ''}\n${stdout}\n${stderr}`));
      }
    });
  });
}

/** The script every case runs: createClient(options), one request, the outcome as JSON. */
const script = (entry, options, url, head = '') => `${head}
import { createClient } from ${JSON.stringify(entry)};
try {
  const c = await createClient(${options});
  const r = await c.request(${JSON.stringify(url)});
  console.log(JSON.stringify({ ok: true, path: r.path }));
  c.close();
} catch (e) {
  console.log(JSON.stringify({ ok: false, name: e.name, option: e.option, message: e.message }));
}
`;

/** An app folder with the package installed in its node_modules (a copy of pkg/). */
function app(name) {
  const dir = join(tmp, name);
  mkdirSync(join(dir, 'node_modules'), { recursive: true });
  cpSync(pkg, join(dir, 'node_modules/stormguard'), { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', dependencies: { stormguard: '*' } }));
  return dir;
}

/** A runtime's binary, or undefined. */
function binary(name) {
  const given = process.env[`STORMGUARD_${name.toUpperCase()}`];
  if (given) return given;
  const local = join(root, 'node_modules/.bin', name);
  if (existsSync(local)) return local;
  return (process.env.PATH ?? '').split(delimiter).map((d) => join(d, name)).find(existsSync);
}

test('Node: a relative wasm path resolves against the package, not the current directory', async () => {
  const echo = `${server.url}/echo?id=rt-node`;
  const entry = join(pkg, 'node.js');
  // Run from a folder that has no stormguard_bg.wasm: the package's own is the one read.
  const ok = await run(process.execPath, ['--input-type=module', '-e', script(entry, "{ wasm: 'stormguard_bg.wasm' }", echo)], tmp);
  assert.deepEqual(ok, { ok: true, path: '/echo' }, JSON.stringify(ok));
  const missing = await run(process.execPath, ['--input-type=module', '-e', script(entry, "{ wasm: 'nope/x.wasm' }", echo)], tmp);
  assert.equal(missing.option, 'wasm');
  assert.ok(missing.message.includes(join(pkg, 'nope/x.wasm')), missing.message);
});

test('no location for the wasm (import.meta.url gives none, as in Cloudflare Workers): OptionsError says so and gives the recipe', async () => {
  const { build } = await import('esbuild');
  // A bundle of the browser entry in which import.meta.url is undefined, as workerd has it.
  const out = join(tmp, 'no-url.cjs');
  await build({ entryPoints: [join(pkg, 'index.js')], bundle: true, format: 'cjs', platform: 'neutral', outfile: out, logLevel: 'silent' });
  const r = await run(process.execPath, ['-e', `
    const { createClient } = require(${JSON.stringify(out)});
    createClient().then(() => console.log(JSON.stringify({ ok: true })),
      (e) => console.log(JSON.stringify({ ok: false, name: e.name, option: e.option, message: e.message })));`], tmp);
  assert.equal(r.name, 'OptionsError', JSON.stringify(r));
  assert.equal(r.option, 'wasm');
  assert.match(r.message, /no location for its wasm module can be worked out here/);
  assert.match(r.message, /import wasm from 'stormguard\/stormguard_bg\.wasm'; createClient\(\{ wasm \}\)/);
  assert.doesNotMatch(r.message, /Invalid URL|could not be read/);
});

test('Deno: without read access the error names the flag and the import that needs none; the import works', async (t) => {
  const deno = binary('deno');
  if (!deno) return t.skip('deno not found (npm i deno, or STORMGUARD_DENO=path)');
  const dir = app('deno');
  const echo = `${server.url}/echo?id=rt-deno`;
  writeFileSync(join(dir, 'main.mjs'), script('stormguard', '{ crossTab: false }', echo));
  const denied = await run(deno, ['run', '--allow-net', 'main.mjs'], dir);
  assert.equal(denied.option, 'wasm', JSON.stringify(denied));
  assert.match(denied.message, /Deno needs read access to it: run with --allow-read=/);
  assert.match(denied.message, /import source wasm from 'stormguard\/stormguard_bg\.wasm'/);
  assert.doesNotMatch(denied.message, /bundler/);
  assert.deepEqual(await run(deno, ['run', '--allow-net', '--allow-read', 'main.mjs'], dir), { ok: true, path: '/echo' });
  writeFileSync(join(dir, 'source.mjs'), script('stormguard', '{ wasm, crossTab: false }', echo,
    "import source wasm from 'stormguard/stormguard_bg.wasm';"));
  assert.deepEqual(await run(deno, ['run', '--allow-net', 'source.mjs'], dir), { ok: true, path: '/echo' });
});

test('Bun: runs as installed; a bundle run from elsewhere reads a relative wasm beside itself', async (t) => {
  const bun = binary('bun');
  if (!bun) return t.skip('bun not found (npm i bun, or STORMGUARD_BUN=path)');
  const dir = app('bun');
  const echo = `${server.url}/echo?id=rt-bun`;
  writeFileSync(join(dir, 'main.mjs'), script('stormguard', '{ crossTab: false }', echo));
  assert.deepEqual(await run(bun, ['main.mjs'], dir), { ok: true, path: '/echo' });
  // `bun build`: the bundle's folder has no .wasm until it is copied there.
  writeFileSync(join(dir, 'rel.mjs'), script('stormguard', "{ crossTab: false, wasm: 'stormguard_bg.wasm' }", echo));
  const dist = join(dir, 'dist');
  await new Promise((resolve, reject) => execFile(bun, ['build', 'main.mjs', 'rel.mjs', '--target=bun', `--outdir=${dist}`],
    { cwd: dir }, (err, so, se) => (err ? reject(new Error(`${err.message}\n${se}`)) : resolve())));
  const missing = await run(bun, [join(dist, 'main.js')], tmp);
  assert.equal(missing.option, 'wasm', JSON.stringify(missing));
  assert.match(missing.message, /copy stormguard_bg\.wasm beside the bundle/);
  copyFileSync(join(pkg, 'stormguard_bg.wasm'), join(dist, 'stormguard_bg.wasm'));
  assert.deepEqual(await run(bun, [join(dist, 'rel.js')], tmp), { ok: true, path: '/echo' }, 'run from another folder');
  assert.deepEqual(await run(bun, [join(dist, 'main.js')], tmp), { ok: true, path: '/echo' });
});
