// Cloudflare Workers (README, "Bun, Deno, Cloudflare Workers and bundled servers", issue 40 item 2): with no option, a client made at module
// scope works. The package's `workerd` export condition imports the .wasm as a module, and the
// client is made for real at its first call, in a request (workerd refuses timers, randomness and
// I/O at module scope, and the client stayed failed). Runs a Worker under `wrangler dev --local`
// (workerd, no network needed) where wrangler is found (STORMGUARD_WRANGLER, else node_modules/.bin;
// it installs from npm: `npm i wrangler@4.86.0`, the last for Node 20); else skipped, the reason printed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../server/server.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));
const wrangler = process.env.STORMGUARD_WRANGLER ?? [join(root, 'node_modules/.bin/wrangler')].find(existsSync);

let server;
let tmp;
before(async () => {
  server = await startServer();
  tmp = mkdtempSync(join(tmpdir(), 'stormguard-workerd-'));
});
after(async () => {
  await server?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** A free loopback port. */
const freePort = () => new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const { port } = s.address();
    s.close(() => resolve(port));
  });
});

// The README's shape: the client (and a derived one, and a listener) made at module scope, used
// in the handler. No `wasm` option.
// createClientSync (issue 39 item 1): the same client without the promise.
const WORKER = `import { createClient, createClientSync } from 'stormguard';

const api = createClient({ crossTab: false, retry: { baseDelayMs: 5 } });
const now = createClientSync({ crossTab: false });
let nowAttempts = 0;
now.on('attempt', () => nowAttempts++);
const nowChild = now.extend({ headers: { 'x-child': 'sync' } });
let attempts = 0;
const ready = api.then((c) => {
  c.on('attempt', () => attempts++);
  return { c, child: c.extend({ headers: { 'x-child': 'yes' } }) };
});

export default {
  async fetch(request) {
    const to = new URL(request.url).searchParams.get('to');
    if (new URL(request.url).searchParams.has('sync')) {
      try {
        const own = await now.request(to);
        const derived = await nowChild.request(to);
        return Response.json({ ok: true, path: own.path, child: derived.headers['x-child'], requests: now.stats().requests, attempts: nowAttempts });
      } catch (e) {
        return Response.json({ ok: false, name: e.name, message: e.message });
      }
    }
    try {
      const { c, child } = await ready;
      const own = await c.request(to);
      const derived = await child.request(to);
      return Response.json({ ok: true, path: own.path, child: derived.headers['x-child'], requests: c.stats().requests, attempts });
    } catch (e) {
      return Response.json({ ok: false, name: e.name, message: e.message });
    }
  },
};
`;

test('a client made at module scope in a Worker, with no option, answers every request', { timeout: 120000 }, async (t) => {
  if (!wrangler) return t.skip('wrangler not found (npm i wrangler@4.86.0, or STORMGUARD_WRANGLER=path)');
  const dir = join(tmp, 'worker');
  mkdirSync(join(dir, 'src'), { recursive: true });
  mkdirSync(join(dir, 'node_modules'));
  cpSync(join(root, 'pkg'), join(dir, 'node_modules/stormguard'), { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'w', private: true, type: 'module' }));
  writeFileSync(join(dir, 'wrangler.json'), JSON.stringify({ name: 'w', main: 'src/index.js', compatibility_date: '2025-09-01' }));
  writeFileSync(join(dir, 'src/index.js'), WORKER);
  const [port, inspector] = [await freePort(), await freePort()];
  const dev = spawn(wrangler, ['dev', '--local', '--ip', '127.0.0.1', '--port', String(port), '--inspector-port', String(inspector)],
    { cwd: dir, detached: true, env: { ...process.env, WRANGLER_SEND_METRICS: 'false', NO_COLOR: '1' } });
  let log = '';
  try {
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`wrangler dev did not start:\n${log}`)), 90000);
      const seen = (chunk) => {
        log += chunk;
        if (log.includes(`Ready on http://127.0.0.1:${port}`)) {
          clearTimeout(timer);
          resolve();
        }
      };
      dev.stdout.on('data', seen);
      dev.stderr.on('data', seen);
      dev.on('exit', (code) => reject(new Error(`wrangler dev exited (${code}):\n${log}`)));
    });
    const ask = async (id) => (await fetch(`http://127.0.0.1:${port}/?to=${encodeURIComponent(`${server.url}/echo?id=${id}`)}`)).json();
    const first = await ask('workerd-1');
    assert.deepEqual(first, { ok: true, path: '/echo', child: 'yes', requests: 2, attempts: 2 }, JSON.stringify(first));
    // The same client (and engine) serves the next request.
    const second = await ask('workerd-2');
    assert.deepEqual(second, { ok: true, path: '/echo', child: 'yes', requests: 4, attempts: 4 }, JSON.stringify(second));
    const ask2 = async (id) => (await fetch(`http://127.0.0.1:${port}/?sync&to=${encodeURIComponent(`${server.url}/echo?id=${id}`)}`)).json();
    const sync = await ask2('workerd-sync');
    assert.deepEqual(sync, { ok: true, path: '/echo', child: 'sync', requests: 2, attempts: 2 }, JSON.stringify(sync));
    assert.doesNotMatch(log, /Disallowed operation/);
  } finally {
    try {
      process.kill(-dev.pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
});
