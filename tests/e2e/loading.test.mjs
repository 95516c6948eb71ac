// How the package finds and loads its wasm, and what it says when it cannot:
// the `exports` map (ESM and CommonJS builds), createClient's `wasm` option
// in Node and in a page, errors that name the file requested, and a host
// lacking fetch & co. Node cases run in child processes: the wasm is loaded
// once per realm, by the first createClient.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { launchChromium, root, startServers, watchErrors } from './browser.mjs';

const pkg = join(root, 'pkg');
const wasmFile = join(pkg, 'stormguard_bg.wasm');
let servers, browser, app, stall;

/**
 * A server of wasm downloads that stall: `/never` never answers;
 * `/stall-once/<id>.wasm` sends its headers (application/wasm) and the
 * module's first bytes, then nothing more, the first time an id is asked
 * for, and the whole module after that. `closed(id)`: how many of the
 * stalled requests of that id the client has since given up on.
 */
async function startStallServer() {
  const seen = new Map();
  const gone = new Map();
  const server = createServer((req, res) => {
    res.setHeader('Access-Control-Allow-Origin', '*');
    const m = /^\/stall-once\/([\w-]+)\.wasm$/.exec(new URL(req.url, 'http://x').pathname);
    if (!m) return; // /never
    const id = m[1];
    const n = (seen.get(id) ?? 0) + 1;
    seen.set(id, n);
    const bytes = readFileSync(wasmFile);
    res.writeHead(200, { 'content-type': 'application/wasm', 'content-length': String(bytes.length), connection: 'close' });
    if (n > 1) return res.end(bytes);
    res.write(bytes.subarray(0, 64));
    req.socket.on('close', () => gone.set(id, (gone.get(id) ?? 0) + 1));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests: (id) => seen.get(id) ?? 0,
    closed: (id) => gone.get(id) ?? 0,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    },
  };
}

before(async () => {
  servers = await startServers();
  stall = await startStallServer();
  // A project with the package installed (a symlink to pkg/), to resolve it by name.
  app = mkdtempSync(join(tmpdir(), 'stormguard-loading-'));
  mkdirSync(join(app, 'node_modules'));
  symlinkSync(pkg, join(app, 'node_modules/stormguard'), 'dir');
  writeFileSync(join(app, 'package.json'), '{"private": true}\n');
});
after(async () => {
  await browser?.close();
  await servers?.close();
  await stall?.close();
  if (app) rmSync(app, { recursive: true, force: true });
});

/** Runs `code` in a fresh Node process in the app folder; resolves with its parsed stdout. */
function node(code, { type = 'module', env = {} } = {}) {
  const file = join(app, type === 'module' ? `t${Math.random().toString(36).slice(2)}.mjs` : `t${Math.random().toString(36).slice(2)}.cjs`);
  writeFileSync(file, code);
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [file], { cwd: app, timeout: 30000, env: { ...process.env, ...env } }, (err, stdout, stderr) => {
      rmSync(file, { force: true });
      if (err) reject(new Error(`${err.message}\n${stdout}\n${stderr}`));
      else resolve(JSON.parse(stdout));
    });
  });
}

const report = `(e) => ({ name: e.name, option: e.option, message: e.message })`;

describe('the exports map', () => {
  test('require() gets the CommonJS build, import the ESM one, and both call out', async () => {
    const url = `${servers.fault}/fail-first?n=1&id=load-cjs`;
    const cjs = await node(
      `const { createClient, HttpError, isStormguardError } = require('stormguard');
       createClient({ retry: { baseDelayMs: 5 } }).then(async (c) => {
         const body = await c.request(${JSON.stringify(url)});
         const e = await c.request(${JSON.stringify(`${servers.fault}/status/404?id=load-cjs`)}).catch((x) => x);
         process.stdout.write(JSON.stringify({ resolved: require.resolve('stormguard'), react: require.resolve('stormguard/react'),
           body, instance: e instanceof HttpError, branded: isStormguardError(e) }));
         c.close();
       });`,
      { type: 'commonjs' },
    );
    assert.match(cjs.resolved, /[\\/]node\.cjs$/);
    assert.match(cjs.react, /[\\/]react\.cjs$/);
    assert.equal(cjs.body.attempt, 2);
    assert.equal(cjs.instance, true);
    assert.equal(cjs.branded, true);

    const esm = await node(
      `import { createClient } from 'stormguard';
       const c = await createClient();
       const body = await c.request(${JSON.stringify(`${servers.fault}/echo?id=load-esm`)});
       process.stdout.write(JSON.stringify({ resolved: import.meta.resolve('stormguard'), method: body.method }));`,
    );
    assert.match(esm.resolved, /\/node\.js$/);
    assert.equal(esm.method, 'GET');
  });

  test('an error from the CommonJS build is a stormguard error to the ESM build too (Symbol.for brand)', async () => {
    const out = await node(
      `import { createRequire } from 'node:module';
       import { isStormguardError } from 'stormguard';
       const { createClient } = createRequire(import.meta.url)('stormguard');
       const e = await createClient({ retries: 1, timeoutMs: -1 }).catch((x) => x);
       process.stdout.write(JSON.stringify({ name: e.name, branded: isStormguardError(e) }));`,
    );
    assert.deepEqual(out, { name: 'OptionsError', branded: true });
  });

  // Only a page sends a call's first attempt before the engine is in (boot.js, in pages only): the
  // Node and workerd entries importing the boot build cost Node's cold import ~8 ms for nothing
  // (bench/startup.mjs, `node bench/startup.mjs --pkg=before=...`).
  test('the boot build is in the browser entry\'s module graph only (not Node\'s, CommonJS\'s or workerd\'s)', () => {
    /** Every package file `entry` imports, transitively (relative specifiers: the package's own files). */
    const graph = (entry, seen = new Set()) => {
      if (seen.has(entry)) return seen;
      seen.add(entry);
      const text = readFileSync(join(pkg, entry), 'utf8');
      for (const m of text.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*['"]\.\/([\w.-]+\.js)['"]/g)) graph(m[1], seen);
      return seen;
    };
    const boot = ['boot.js', 'stormguard_boot.js'];
    const browser = graph('index.js');
    for (const f of boot) assert.ok(browser.has(f), `index.js imports ${f}: ${[...browser]}`);
    for (const entry of ['node.js', 'workerd.js']) {
      const files = graph(entry);
      assert.ok(files.has('core.js') && files.has('stormguard.js'), `${entry}: ${[...files]}`);
      for (const f of boot) assert.ok(!files.has(f), `${entry} imports ${f}: ${[...files]}`);
    }
    // node.cjs is node.js bundled: boot.js's strings are not in it
    assert.doesNotMatch(readFileSync(join(pkg, 'node.cjs'), 'utf8'), /boot attempt timed out/);
  });

  // The boot module travels as hex in stormguard_boot.js (scripts/build.mjs); its first call decodes it
  // with Uint8Array.fromHex where the host has it (Chromium, Firefox), else with a char code loop.
  test("the boot build's inlined module decodes to the same bytes with Uint8Array.fromHex and without", async () => {
    const file = join(pkg, 'stormguard_boot.js');
    const want = Buffer.from(/"([0-9a-f]{64,})"/.exec(readFileSync(file, 'utf8'))[1], 'hex');
    const { bytes } = await import(pathToFileURL(file).href);
    const had = Object.getOwnPropertyDescriptor(Uint8Array, 'fromHex');
    try {
      delete Uint8Array.fromHex;
      const loop = bytes();
      assert.ok(loop instanceof Uint8Array && Buffer.from(loop).equals(want), 'the loop');
      assert.ok(WebAssembly.validate(loop));
      let used = 0;
      Uint8Array.fromHex = (hex) => {
        used++;
        return new Uint8Array(Buffer.from(hex, 'hex'));
      };
      assert.ok(Buffer.from(bytes()).equals(want), 'fromHex');
      assert.equal(used, 1);
    } finally {
      delete Uint8Array.fromHex;
      if (had) Object.defineProperty(Uint8Array, 'fromHex', had);
    }
  });
});

describe('the wasm option in Node', () => {
  const ok = (load) =>
    node(`import { readFileSync } from 'node:fs';
      import { createClient } from 'stormguard';
      const wasm = ${load};
      const c = await createClient({ wasm });
      const body = await c.request(${JSON.stringify(`${servers.fault}/echo?id=load-opt`)});
      process.stdout.write(JSON.stringify({ method: body.method }));`);

  test('bytes, a file path, a file URL, a Module, a Response and an http URL all load', async () => {
    const file = JSON.stringify(wasmFile);
    for (const load of [
      `readFileSync(${file})`,
      `new Uint8Array(readFileSync(${file}))`,
      `readFileSync(${file}).buffer.slice(0)`,
      file,
      JSON.stringify(pathToFileURL(wasmFile).href),
      `new URL(${JSON.stringify(pathToFileURL(wasmFile).href)})`,
      `new WebAssembly.Module(readFileSync(${file}))`,
      `new Response(readFileSync(${file}), { headers: { 'content-type': 'application/wasm' } })`,
      JSON.stringify(`${servers.site}/pkg/stormguard_bg.wasm`),
    ]) {
      assert.deepEqual(await ok(load), { method: 'GET' }, load);
    }
  });

  test('a missing file, a 404 and bytes that are not wasm: an OptionsError naming what was requested', async () => {
    const fail = (load) =>
      node(`import { createClient } from 'stormguard';
        const e = await createClient({ wasm: ${load} }).catch(${report});
        process.stdout.write(JSON.stringify(e));`);
    const missing = await fail(JSON.stringify('/nonexistent/dir/stormguard_bg.wasm'));
    assert.equal(missing.name, 'OptionsError');
    assert.equal(missing.option, 'wasm');
    assert.match(missing.message, /could not read the wasm module \/nonexistent\/dir\/stormguard_bg\.wasm \(ENOENT\)/);
    assert.match(missing.message, /createClient\(\{ wasm:/);

    const notFound = await fail(JSON.stringify(`${servers.site}/pkg/missing.wasm`));
    assert.equal(notFound.name, 'OptionsError');
    assert.match(notFound.message, new RegExp(`${servers.site}/pkg/missing\\.wasm failed with HTTP 404`));

    const html = await fail(JSON.stringify(`${servers.site}/tests/e2e/pages/esm.html`));
    assert.equal(html.name, 'OptionsError');
    assert.match(html.message, /esm\.html is not a WebAssembly module \(\d+ bytes, content-type text\/html[^,]*, starting "<!doctype html>/);

    // A URL nothing answers at: the host's fetch refuses it, and the option is what cannot be used.
    const refused = await fail(JSON.stringify('http://127.0.0.1:1/stormguard_bg.wasm'));
    assert.deepEqual([refused.name, refused.option], ['OptionsError', 'wasm']);
    assert.match(refused.message, /could not fetch the wasm module http:\/\/127\.0\.0\.1:1\/stormguard_bg\.wasm: fetch failed/);

    const text = await fail(`new TextEncoder().encode('not wasm at all')`);
    assert.match(text.message, /the wasm option is not a WebAssembly module \(15 bytes, starting "not wasm at all"\)/);

    const wrongModule = await fail(`new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0])`);
    assert.equal(wrongModule.name, 'OptionsError');
    assert.match(wrongModule.message, /the wasm option is not this version's stormguard WebAssembly module \(TypeError: /);

    const wrongType = await fail('42');
    assert.deepEqual(
      [wrongType.name, wrongType.option],
      ['OptionsError', 'wasm'],
    );
    assert.match(wrongType.message, /wasm must be a URL/);
  });

  test('a failed load is not kept: the next createClient loads again', async () => {
    const out = await node(`import { createClient } from 'stormguard';
      const first = await createClient({ wasm: '/nonexistent.wasm' }).catch((e) => e.name);
      const c = await createClient();
      const body = await c.request(${JSON.stringify(`${servers.fault}/echo?id=load-again`)});
      process.stdout.write(JSON.stringify({ first, method: body.method }));`);
    assert.deepEqual(out, { first: 'OptionsError', method: 'GET' });
  });

  test('a wasm load that stalls rejects with OptionsError after deadlineMs, stops its download, and is not kept', async () => {
    const out = await node(`import { readFileSync } from 'node:fs';
      import { createClient } from 'stormguard';
      const bytes = readFileSync(${JSON.stringify(wasmFile)});
      const timed = async (p) => {
        const t0 = performance.now();
        return p.then((c) => ({ ok: typeof c.request, ms: performance.now() - t0 }),
          (e) => ({ name: e.name, option: e.option, message: e.message, ms: performance.now() - t0 }));
      };
      const never = await timed(createClient({ wasm: ${JSON.stringify(`${stall.url}/never`)}, deadlineMs: 300 }));
      const stalled = await timed(createClient({ wasm: ${JSON.stringify(`${stall.url}/stall-once/node.wasm`)}, deadlineMs: 300 }));
      const endless = new Response(new ReadableStream({ start(c) { c.enqueue(bytes.subarray(0, 64)); } }),
        { headers: { 'content-type': 'application/wasm' } });
      const body = await timed(createClient({ wasm: endless, deadlineMs: 300 }));
      // The same URL again: a new download, which this time finishes.
      const again = await timed(createClient({ wasm: ${JSON.stringify(`${stall.url}/stall-once/node.wasm`)}, deadlineMs: 5000 }));
      process.stdout.write(JSON.stringify({ never, stalled, body, again }));`);
    for (const k of ['never', 'stalled', 'body']) {
      assert.equal(out[k].name, 'OptionsError', k);
      assert.equal(out[k].option, 'wasm', k);
      assert.match(out[k].message, /did not finish within 300 ms/, k);
      assert.ok(out[k].ms >= 290 && out[k].ms < 3000, `${k}: ${out[k].ms} ms`);
    }
    assert.match(out.never.message, new RegExp(`${stall.url}/never`));
    assert.equal(out.again.ok, 'function');
    assert.equal(stall.requests('node'), 2);
    assert.equal(stall.closed('node'), 1, 'the stalled download was aborted');
  });

  test('while a load stalls, a createClient with valid bytes loads at once, and the stalled call takes that module', async () => {
    const out = await node(`import { readFileSync } from 'node:fs';
      import { createClient } from 'stormguard';
      const t0 = performance.now();
      const stalled = createClient({ wasm: ${JSON.stringify(`${stall.url}/never`)}, deadlineMs: 10000 })
        .then((c) => ({ ok: typeof c.request, ms: performance.now() - t0 }), (e) => ({ name: e.name, message: e.message }));
      const c = await createClient({ wasm: readFileSync(${JSON.stringify(wasmFile)}) });
      const loadedMs = performance.now() - t0;
      const body = await c.request(${JSON.stringify(`${servers.fault}/echo?id=load-stalled`)});
      process.stdout.write(JSON.stringify({ loadedMs, method: body.method, stalled: await stalled }));`);
    assert.equal(out.method, 'GET');
    assert.ok(out.loadedMs < 5000, `${out.loadedMs} ms`);
    assert.equal(out.stalled.ok, 'function', JSON.stringify(out.stalled));
    assert.ok(out.stalled.ms < 5000, `the stalled call ended with the load: ${out.stalled.ms} ms`);
  });

  test('a used Response, an erroring stream, a detached buffer, a fake Response: OptionsError, not a TypeError', async () => {
    const out = await node(`import { readFileSync } from 'node:fs';
      import { createClient } from 'stormguard';
      const bytes = readFileSync(${JSON.stringify(wasmFile)});
      const used = new Response(bytes, { headers: { 'content-type': 'application/wasm' } });
      await used.arrayBuffer();
      const usedPlain = new Response(bytes);
      await usedPlain.arrayBuffer();
      const erroring = (type) => new Response(new ReadableStream({ pull(c) { c.error(new Error('disk gone')); } }),
        type ? { headers: { 'content-type': type } } : undefined);
      const detached = bytes.buffer.slice(0);
      const detachedView = new Uint8Array(detached);
      structuredClone(detached, { transfer: [detached] });
      const cases = {
        used, usedPlain, erroring: erroring(), erroringWasm: erroring('application/wasm'), detached,
        detachedView,
        fakeProto: Object.create(Response.prototype),
        fakeTag: { [Symbol.toStringTag]: 'Response', ok: true, status: 200 },
      };
      const out = {};
      for (const [k, wasm] of Object.entries(cases)) {
        out[k] = await createClient({ wasm }).then(() => 'loaded', (e) => ({ name: e.name, option: e.option, message: e.message }));
      }
      process.stdout.write(JSON.stringify(out));`);
    for (const [k, e] of Object.entries(out)) {
      assert.deepEqual([e.name, e.option], ['OptionsError', 'wasm'], `${k}: ${JSON.stringify(e)}`);
    }
    assert.match(out.used.message, /could not be read \(TypeError: /);
    assert.match(out.erroring.message, /could not be read/);
  });

  test('a host without fetch, Headers, Request, Response: createClient names them and the fix', async () => {
    for (const type of ['module', 'commonjs']) {
      const load = type === 'module' ? `const { createClient } = await import('stormguard');` : `const { createClient } = require('stormguard');`;
      const out = await node(
        `${type === 'module' ? '' : '(async () => {'}
         for (const n of ['fetch', 'Headers', 'Request', 'Response']) delete globalThis[n];
         ${load}
         const e = await createClient().catch((x) => x);
         process.stdout.write(JSON.stringify({ name: e.name, message: e.message }));
         ${type === 'module' ? '' : '})();'}`,
        { type },
      );
      assert.equal(out.name, 'Error', type);
      assert.match(out.message, /lacks the global fetch, Headers, Request, Response, which stormguard needs/, type);
      assert.match(out.message, /testEnvironment to 'jest-fixed-jsdom'/, type);
    }
  });

  test('the CommonJS build loads where TextDecoder and TextEncoder are missing (Jest jsdom)', async () => {
    const out = await node(
      `void [fetch, Headers, Request, Response]; // Node's undici loads lazily and needs them itself
       delete globalThis.TextDecoder; delete globalThis.TextEncoder;
       const { createClient } = require('stormguard');
       createClient().then(async (c) => {
         const body = await c.request(${JSON.stringify(`${servers.fault}/status/500?id=load-td&body=${encodeURIComponent('é'.repeat(3))}`)}, { retry: false }).catch((e) => e.body);
         process.stdout.write(JSON.stringify({ body, global: typeof TextDecoder }));
       });`,
      { type: 'commonjs' },
    );
    assert.deepEqual(out, { body: 'ééé', global: 'undefined' });
  });
});

describe('the wasm option in a page', () => {
  before(async () => {
    browser = await launchChromium();
  });

  /** A fresh page (a fresh realm: nothing loaded yet) running `fn(site)`. */
  async function inPage(fn) {
    const page = await browser.newPage();
    const errors = watchErrors(page);
    await page.goto(`${servers.site}/tests/e2e/pages/esm.html`);
    await page.waitForFunction(() => window.ready === true);
    try {
      return { result: await page.evaluate(fn, { site: servers.site, fault: servers.fault }), errors };
    } finally {
      await page.close();
    }
  }

  test('a URL, a Response, bytes and a Module all load; a relative string resolves against the page', async () => {
    const { result, errors } = await inPage(async ({ fault }) => {
      const out = [];
      const sources = [
        () => '/pkg/stormguard_bg.wasm',
        () => new URL('/pkg/stormguard_bg.wasm', location.href),
        () => fetch('/pkg/stormguard_bg.wasm'),
        async () => (await fetch('/pkg/stormguard_bg.wasm')).arrayBuffer(),
        async () => WebAssembly.compile(await (await fetch('/pkg/stormguard_bg.wasm')).arrayBuffer()),
      ];
      // Each in a fresh realm: an iframe loading the package anew.
      for (const source of sources) {
        const frame = document.createElement('iframe');
        frame.src = '/tests/e2e/pages/esm.html';
        document.body.append(frame);
        await new Promise((r) => frame.addEventListener('load', r, { once: true }));
        while (!frame.contentWindow.ready) await new Promise((r) => setTimeout(r, 10));
        const w = frame.contentWindow;
        let wasm = await source();
        // The frame's realm gets its own copies (instanceof is per realm).
        if (wasm instanceof Response) wasm = await w.fetch('/pkg/stormguard_bg.wasm');
        else if (wasm instanceof ArrayBuffer) wasm = new w.Uint8Array(wasm);
        else if (wasm instanceof WebAssembly.Module) wasm = await w.WebAssembly.compile(await (await fetch('/pkg/stormguard_bg.wasm')).arrayBuffer());
        const c = await w.stormguard.createClient({ wasm });
        out.push((await c.request(`${fault}/echo?id=page-opt`)).method);
        frame.remove();
      }
      return out;
    });
    assert.deepEqual(result, ['GET', 'GET', 'GET', 'GET', 'GET']);
    assert.deepEqual(errors, []);
  });

  test('a 404 and an HTML page instead of the wasm: the error names the URL; a later createClient loads', async () => {
    const { result } = await inPage(async () => {
      const { createClient } = window.stormguard;
      const msg = (e) => ({ name: e.name, option: e.option, message: e.message });
      const missing = await createClient({ wasm: '/pkg/nope.wasm' }).catch(msg);
      const html = await createClient({ wasm: '/tests/e2e/pages/esm.html' }).catch(msg);
      const c = await createClient();
      return { missing, html, loaded: typeof c.request };
    });
    assert.equal(result.missing.name, 'OptionsError');
    assert.equal(result.missing.option, 'wasm');
    assert.match(result.missing.message, new RegExp(`${servers.site}/pkg/nope\\.wasm failed with HTTP 404`));
    assert.equal(result.html.name, 'OptionsError');
    assert.match(result.html.message, new RegExp(`${servers.site}/tests/e2e/pages/esm\\.html is not a WebAssembly module`));
    assert.match(result.html.message, /content-type text\/html/);
    assert.equal(result.loaded, 'function');
  });
});

describe('a wasm load that stalls, and unusable wasm values, in a page', () => {
  before(async () => {
    browser ??= await launchChromium();
  });

  test('a URL that never answers and a body that never ends: OptionsError after deadlineMs; valid bytes load meanwhile', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${servers.site}/tests/e2e/pages/esm.html`);
      await page.waitForFunction(() => window.ready === true);
      const out = await page.evaluate(async ({ stallUrl, fault }) => {
        const { createClient } = window.stormguard;
        const timed = async (p) => {
          const t0 = performance.now();
          return p.then((c) => ({ ok: typeof c.request, ms: performance.now() - t0 }),
            (e) => ({ name: e.name, option: e.option, message: e.message, ms: performance.now() - t0 }));
        };
        const head = new Uint8Array(await (await fetch('/pkg/stormguard_bg.wasm')).arrayBuffer()).slice(0, 64);
        const endless = (type) => new Response(new ReadableStream({ start(c) { c.enqueue(head); } }),
          { headers: { 'content-type': type } });
        const never = await timed(createClient({ wasm: `${stallUrl}/never`, deadlineMs: 300 }));
        const stalled = await timed(createClient({ wasm: `${stallUrl}/stall-once/page.wasm`, deadlineMs: 300 }));
        const bodyWasm = await timed(createClient({ wasm: endless('application/wasm'), deadlineMs: 300 }));
        const bodyPlain = await timed(createClient({ wasm: endless('application/octet-stream'), deadlineMs: 300 }));
        // A stalled load is pending while bytes are given: they load at once.
        const pending = timed(createClient({ wasm: `${stallUrl}/never`, deadlineMs: 10000 }));
        const bytes = await (await fetch('/pkg/stormguard_bg.wasm')).arrayBuffer();
        const c = await timed(createClient({ wasm: bytes }));
        const method = (await (await createClient()).request(`${fault}/echo?id=page-stalled`)).method;
        return { never, stalled, bodyWasm, bodyPlain, c, method, pending: await pending };
      }, { stallUrl: stall.url, fault: servers.fault });
      for (const k of ['never', 'stalled', 'bodyWasm', 'bodyPlain']) {
        assert.deepEqual([out[k].name, out[k].option], ['OptionsError', 'wasm'], `${k}: ${JSON.stringify(out[k])}`);
        assert.match(out[k].message, /did not finish within 300 ms/, k);
        assert.ok(out[k].ms >= 290 && out[k].ms < 3000, `${k}: ${out[k].ms} ms`);
      }
      assert.equal(out.c.ok, 'function');
      assert.ok(out.c.ms < 5000, `${out.c.ms} ms`);
      assert.equal(out.method, 'GET');
      assert.equal(out.pending.ok, 'function', JSON.stringify(out.pending));
      assert.equal(stall.closed('page'), 1, 'the stalled download was aborted');
    } finally {
      await page.close();
    }
  });

  test('the default download stalls after its headers: OptionsError after deadlineMs, then the next createClient loads', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      let served = 0;
      // The first request for the default file goes to a server that stalls after the headers.
      await page.route(`${servers.site}/pkg/stormguard_bg.wasm`, (route) =>
        served++ === 0 ? route.continue({ url: `${stall.url}/stall-once/default.wasm` }) : route.continue());
      await page.goto(`${servers.site}/tests/e2e/pages/esm.html`);
      await page.waitForFunction(() => window.ready === true);
      const out = await page.evaluate(async () => {
        const t0 = performance.now();
        const first = await window.stormguard.createClient({ deadlineMs: 300 })
          .then(() => 'loaded', (e) => ({ name: e.name, option: e.option, message: e.message, ms: performance.now() - t0 }));
        const second = await window.stormguard.createClient().then((c) => typeof c.request);
        return { first, second };
      });
      assert.deepEqual([out.first.name, out.first.option], ['OptionsError', 'wasm'], JSON.stringify(out.first));
      assert.match(out.first.message, /stormguard_bg\.wasm \(the file beside the package\) did not finish within 300 ms/);
      assert.ok(out.first.ms >= 290 && out.first.ms < 3000, `${out.first.ms} ms`);
      assert.equal(out.second, 'function');
      assert.equal(served, 2);
      assert.equal(stall.requests('default'), 1);
      for (let i = 0; i < 50 && stall.closed('default') === 0; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(stall.closed('default'), 1, 'the stalled download was aborted');
    } finally {
      await context.close();
    }
  });

  test('a used Response, an erroring stream, a detached buffer, a fake Response: OptionsError, not a TypeError', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${servers.site}/tests/e2e/pages/esm.html`);
      await page.waitForFunction(() => window.ready === true);
      const out = await page.evaluate(async () => {
        const { createClient } = window.stormguard;
        const used = await fetch('/pkg/stormguard_bg.wasm');
        await used.arrayBuffer();
        const usedPlain = new Response('x');
        await usedPlain.text();
        const erroring = (type) => new Response(new ReadableStream({ pull(c) { c.error(new Error('disk gone')); } }),
          { headers: { 'content-type': type } });
        const detached = await (await fetch('/pkg/stormguard_bg.wasm')).arrayBuffer();
        const detachedView = new Uint8Array(detached);
        structuredClone(detached, { transfer: [detached] });
        const cases = {
          used, usedPlain, erroring: erroring('text/plain'), erroringWasm: erroring('application/wasm'), detached,
          detachedView, fakeProto: Object.create(Response.prototype),
          fakeTag: { [Symbol.toStringTag]: 'Response', ok: true, status: 200 },
        };
        const out = {};
        for (const [k, wasm] of Object.entries(cases)) {
          out[k] = await createClient({ wasm }).then(() => 'loaded', (e) => ({ name: e.name, option: e.option, message: e.message }));
        }
        return out;
      });
      for (const [k, e] of Object.entries(out)) {
        assert.deepEqual([e.name, e.option], ['OptionsError', 'wasm'], `${k}: ${JSON.stringify(e)}`);
      }
      assert.match(out.used.message, /could not be read \(TypeError: /);
    } finally {
      await page.close();
    }
  });
});

describe('loading the wasm early in a page', () => {
  before(async () => {
    browser ??= await launchChromium();
  });

  const WASM = '/pkg/stormguard_bg.wasm';
  /** The site's requests for the default wasm file so far (static files log under the id 'default'). */
  const wasmRequests = async () =>
    (await (await fetch(`${servers.site}/_log?id=default`)).json()).filter((e) => e.path === WASM).length;

  /** A page at `path` on the site whose HTML is `html` (the modules and the wasm come from the site). */
  async function pageWith(context, path, html) {
    const page = await context.newPage();
    await page.route(`${servers.site}${path}`, (route) => route.fulfill({ contentType: 'text/html', body: html }));
    return page;
  }

  test('the default module is fetched as the package is imported, before any createClient, and only once', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const errors = watchErrors(page);
      const before = await wasmRequests();
      await page.goto(`${servers.site}/tests/e2e/pages/esm.html`);
      await page.waitForFunction(() => window.ready === true);
      // No createClient yet: the import alone has asked for the wasm.
      for (let i = 0; i < 100 && (await wasmRequests()) === before; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(await wasmRequests(), before + 1);
      const out = await page.evaluate(async (fault) => {
        const c = await window.stormguard.createClient();
        const again = await window.stormguard.createClient();
        return [(await c.request(`${fault}/echo?id=early`)).method, typeof again.request];
      }, servers.fault);
      assert.deepEqual(out, ['GET', 'function']);
      assert.equal(await wasmRequests(), before + 1);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  test('a createClient({ wasm }) at module scope fetches only the module it names', async () => {
    const context = await browser.newContext();
    try {
      const page = await pageWith(context, '/scoped.html', `<!doctype html><link rel="icon" href="data:,">
        <script type="module">
          import { createClient } from '/pkg/index.js';
          const c = await createClient({ wasm: '${WASM}?id=named' });
          window.result = typeof c.request;
        </script>`);
      const errors = watchErrors(page);
      const before = await wasmRequests();
      await page.goto(`${servers.site}/scoped.html`);
      await page.waitForFunction(() => window.result !== undefined);
      assert.equal(await page.evaluate(() => window.result), 'function');
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(await wasmRequests(), before, 'the default file was not requested');
      const named = (await (await fetch(`${servers.site}/_log?id=named`)).json()).filter((e) => e.path === WASM);
      assert.equal(named.length, 1);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  test('an early load that failed is the first createClient\'s error; the next one loads again', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      let served = 0;
      // The first request for the default file gets a 404, as from a server that lacks it.
      await page.route(`${servers.site}${WASM}`, (route) =>
        served++ === 0 ? route.fulfill({ status: 404, contentType: 'text/plain', body: 'not here' }) : route.continue());
      await page.goto(`${servers.site}/tests/e2e/pages/esm.html`);
      await page.waitForFunction(() => window.ready === true);
      const out = await page.evaluate(async () => {
        const first = await window.stormguard.createClient().then(() => 'loaded', (e) => ({ name: e.name, option: e.option, message: e.message }));
        const second = await window.stormguard.createClient().then((c) => typeof c.request);
        return { first, second };
      });
      assert.equal(out.first.name, 'OptionsError');
      assert.equal(out.first.option, 'wasm');
      assert.match(out.first.message, new RegExp(`${servers.site}${WASM} failed with HTTP 404`));
      assert.equal(out.second, 'function');
      assert.equal(served, 2);
    } finally {
      await context.close();
    }
  });

  test('README\'s preload tag: the page fetches the wasm once; a tag without crossorigin does not match (twice)', async () => {
    const html = readFileSync(join(root, 'tests/e2e/pages/preload.html'), 'utf8');
    const tag = '<link rel="preload" href="/pkg/stormguard_bg.wasm" as="fetch" type="application/wasm" crossorigin>';
    assert.ok(html.includes(tag), 'the page carries the tag as README shows it');
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    assert.ok(readme.includes(tag.replace('/pkg/', '/node_modules/stormguard/')), 'README shows the same tag');
    const requestsOf = async (body) => {
      const context = await browser.newContext();
      try {
        const page = await pageWith(context, '/preloaded.html', body);
        const before = await wasmRequests();
        await page.goto(`${servers.site}/preloaded.html`);
        await page.waitForFunction(() => window.result !== undefined);
        assert.deepEqual(await page.evaluate(() => window.result), { ready: true });
        await new Promise((r) => setTimeout(r, 200));
        return (await wasmRequests()) - before;
      } finally {
        await context.close();
      }
    };
    assert.equal(await requestsOf(html), 1);
    assert.equal(await requestsOf(html.replace(' crossorigin>', '>')), 2);
  });
});

describe('a client that failed to load, in the hooks', () => {
  test('Vue useSchema serves the fallback (source fallback) with the load error; none without a fallback', async () => {
    const { effectScope, nextTick, isReadonly, isRef } = await import('vue');
    const { useSchema } = await import('../../pkg/vue.js');
    const { OptionsError } = await import('../../pkg/node.js');
    const failed = new OptionsError('stormguard: /x.wasm is not a WebAssembly module', { option: 'wasm' });
    const client = Promise.reject(failed);
    client.catch(() => {});
    const scope = effectScope();
    const [withFallback, without] = scope.run(() => [
      useSchema(client, 'http://127.0.0.1/layout', { fallback: { title: 'Built-in' } }),
      useSchema(client, 'http://127.0.0.1/layout'),
    ]);
    for (let i = 0; i < 10 && withFallback.loading.value; i++) await nextTick();
    assert.deepEqual(withFallback.data.value, { title: 'Built-in' });
    assert.equal(withFallback.source.value, 'fallback');
    assert.equal(withFallback.stale.value, true);
    assert.equal(withFallback.error.value, failed);
    assert.equal(withFallback.loading.value, false);
    assert.equal(without.data.value, undefined);
    assert.equal(without.source.value, 'none');
    assert.equal(without.error.value, failed);
    // The refs are read-only (README: "shallow read-only refs"): a write warns and changes nothing.
    for (const k of ['data', 'source', 'stale', 'ageMs', 'loading', 'error']) {
      assert.ok(isRef(withFallback[k]) && isReadonly(withFallback[k]), k);
    }
    const warn = console.warn;
    console.warn = () => {};
    try {
      withFallback.data.value = 'overwritten';
    } finally {
      console.warn = warn;
    }
    assert.deepEqual(withFallback.data.value, { title: 'Built-in' });
    scope.stop();
  });
});
