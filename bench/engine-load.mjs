// How long the engine takes to arrive in a page (issue 39; the storm's cold tabs, storm.mjs
// TAB_VARIANTS): a page that makes its client at module scope, as an app does, and the time from the
// wasm's request (Resource Timing) to the client's `ready` (the download, compile and instantiate, and
// the client's build), besides the download alone. pkg/ served gzip (as a CDN would) from loopback,
// a fresh browser context per load, 7 loads per condition: unthrottled; CDP's 1.6 Mbps down / 750 kbps
// up / 150 ms RTT; the same with the CPU 4x slower.
//
//   node bench/engine-load.mjs [folder with pkg/]
import http from 'node:http';
import { gzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { join, extname } from 'node:path';
import { launchChromium, root as repo } from '../tests/e2e/browser.mjs';

const root = process.argv[2] ?? repo; // a folder with pkg/: this checkout, or another build's
const TYPES = { '.js': 'text/javascript', '.wasm': 'application/wasm', '.html': 'text/html' };
const PAGE = `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><script type="module">
import { createClientSync } from '/pkg/index.js';
const t0 = performance.now();
const c = createClientSync();
c.ready.then(() => {
  const ready = performance.now();
  const w = performance.getEntriesByType('resource').find((e) => e.name.endsWith('.wasm'));
  window.result = { ms: ready - w.startTime, fromCall: ready - t0, download: w.responseEnd - w.startTime, size: w.transferSize };
});
</script>`;
const gzipped = new Map();
const server = http.createServer((req, res) => {
  const path = new URL(req.url, 'http://x').pathname;
  let body;
  try {
    if (path !== '/' && !/^\/pkg\/[\w.-]+$/.test(path)) throw new Error('not served');
    body = path === '/' ? Buffer.from(PAGE) : readFileSync(join(root, path));
  } catch { res.writeHead(404).end(); return; }
  if (!gzipped.has(path)) gzipped.set(path, gzipSync(body, { level: 9 }));
  const gz = gzipped.get(path);
  res.writeHead(200, { 'content-type': path === '/' ? 'text/html' : TYPES[extname(path)] ?? 'application/octet-stream', 'content-encoding': 'gzip', 'cache-control': 'no-store' });
  res.end(gz);
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${server.address().port}/`;
const browser = await launchChromium();
console.log(`[engine-load] load average ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')}`);
const CONDS = [
  ['unthrottled', null, 1],
  ['slow', { latency: 150, down: 1.6e6, up: 750e3 }, 1],
  ['slow-cpu', { latency: 150, down: 1.6e6, up: 750e3 }, 4],
];
const med = (a) => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)];
for (const [name, net, cpu] of CONDS) {
  const rows = [];
  for (let i = 0; i < 7; i++) {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    const cdp = await ctx.newCDPSession(page);
    await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
    if (net) await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: net.latency, downloadThroughput: net.down / 8, uploadThroughput: net.up / 8 });
    if (cpu !== 1) await cdp.send('Emulation.setCPUThrottlingRate', { rate: cpu });
    await page.goto(url);
    await page.waitForFunction(() => window.result !== undefined, null, { timeout: 60000 });
    rows.push(await page.evaluate(() => window.result));
    await ctx.close();
  }
  console.log(`${name.padEnd(12)} wasm request -> engine ready median ${med(rows.map((r) => r.ms)).toFixed(0)} ms ` +
    `(${rows.map((r) => r.ms.toFixed(0)).join(', ')}); createClientSync -> ready ${med(rows.map((r) => r.fromCall)).toFixed(0)} ms; wasm download median ${med(rows.map((r) => r.download)).toFixed(0)} ms, ${rows[0].size} bytes transferred`);
}
await browser.close();
server.close();
