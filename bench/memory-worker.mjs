// One memory run (started by memory.mjs with --expose-gc): `calls` calls
// through one client at concurrency 6, every URL unique, with the JS heap and
// (for stormguard) the wasm linear memory measured after a forced GC before
// the first call, after a warm-up, and at the end. Reports over IPC.
const { url, calls, warmup, strategy } = JSON.parse(process.argv[2]);
const CONCURRENCY = 6;

async function snapshot(wasmMemory) {
  for (let i = 0; i < 3; i++) {
    globalThis.gc();
    await new Promise((r) => setImmediate(r));
  }
  const m = process.memoryUsage();
  return {
    heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers, rss: m.rss,
    wasmMemory: wasmMemory ? wasmMemory.buffer.byteLength : null,
  };
}

async function main() {
  let call;
  let wasmMemory = null;
  let stats = () => null;
  let close = () => {};
  if (strategy === 'stormguard') {
    const { createClient } = await import('../pkg/node.js');
    const client = await createClient();
    // the glue returns the instance's exports once initialised; its linear memory is the one
    // Memory among them (their names are minified: scripts/minify-names.mjs)
    const { initSync } = await import('../pkg/stormguard.js');
    wasmMemory = Object.values(initSync({ module: new Uint8Array(0) })).find((v) => v instanceof WebAssembly.Memory);
    call = (u) => client.request(u);
    stats = () => client.stats();
    close = () => client.close();
  } else {
    call = (u) => fetch(u).then((r) => r.json());
  }
  let n = 0;
  let failed = 0;
  const runCalls = async (count) => {
    let left = count;
    const worker = async () => {
      while (left > 0) {
        left--;
        await call(`${url}/status/200?id=mem&n=${n++}`).catch(() => failed++);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  };
  const before = await snapshot(wasmMemory);
  await runCalls(warmup);
  const afterWarmup = await snapshot(wasmMemory);
  const t0 = performance.now();
  await runCalls(calls - warmup);
  const seconds = (performance.now() - t0) / 1000;
  const after = await snapshot(wasmMemory);
  const s = stats();
  close();
  const afterClose = await snapshot(wasmMemory);
  return { strategy, calls, warmup, failed, seconds, before, afterWarmup, after, afterClose, stats: s };
}

main().then(
  (result) => process.send({ type: 'result', result }, () => process.exit(0)),
  (e) => process.send({ type: 'result', error: String(e && e.stack || e) }, () => process.exit(1)),
);
