// Memory: 100k calls (quick: 10k) through one stormguard client in Node, and
// the same calls through plain fetch for comparison, each in a fresh process
// started with --expose-gc so every snapshot follows a full collection.
import { join } from 'node:path';
import { ask, benchDir, forkNode } from './lib.mjs';

export async function runMemory({ quick, log = console.log } = {}) {
  const calls = quick ? 10_000 : 100_000;
  const warmup = quick ? 500 : 2000;
  const server = await forkNode(join(benchDir, 'server-proc.mjs'), [JSON.stringify({ logCap: 1000 })]);
  const runs = {};
  try {
    for (const strategy of ['stormguard', 'raw']) {
      log(`[memory] ${calls} calls through one ${strategy === 'raw' ? 'plain fetch' : 'stormguard client'} (concurrency 6)`);
      const { child, ready } = await forkNode(join(benchDir, 'memory-worker.mjs'),
        [JSON.stringify({ url: server.ready.url, calls, warmup, strategy })], { execArgv: ['--expose-gc'] });
      if (ready.error) throw new Error(`memory run ${strategy}: ${ready.error}`);
      await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
      const r = ready.result;
      runs[strategy] = r;
      const mb = (b) => (b / 1048576).toFixed(2);
      log(`[memory]   heap ${mb(r.before.heapUsed)} -> ${mb(r.afterWarmup.heapUsed)} -> ${mb(r.after.heapUsed)} MB` +
        (r.after.wasmMemory !== null ? `, wasm memory ${mb(r.before.wasmMemory)} -> ${mb(r.afterWarmup.wasmMemory)} -> ${mb(r.after.wasmMemory)} MB` : '') +
        `, ${(calls / r.seconds).toFixed(0)} calls/s, ${r.failed} failed`);
    }
  } finally {
    await ask(server.child, 'close').catch(() => {});
  }
  return { calls, warmup, runs };
}
