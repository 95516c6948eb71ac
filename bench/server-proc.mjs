// The fault server (tests/server/server.mjs) in a process of its own, so the
// load generator and the server each have their own event loop and CPU
// account. Talks to its parent over IPC:
//   ready   -> { type: 'ready', url, urls, timeOrigin }
//   'usage' -> { cpuMs, wallMs, loopDelayP99Ms, loopDelayMaxMs } since the last 'mark'
//   'mark'  -> starts a new usage interval
//   'close' -> closes the server and exits
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startServer } from '../tests/server/server.mjs';

const opts = JSON.parse(process.argv[2] || '{}');
const srv = await startServer(opts);
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();
let cpu0 = process.cpuUsage();
let wall0 = performance.now();

process.on('message', async (m) => {
  if (m.type === 'mark') {
    cpu0 = process.cpuUsage();
    wall0 = performance.now();
    loop.reset();
    process.send({ type: 'mark' });
  } else if (m.type === 'usage') {
    const c = process.cpuUsage(cpu0);
    process.send({
      type: 'usage',
      cpuMs: (c.user + c.system) / 1000,
      wallMs: performance.now() - wall0,
      loopDelayP99Ms: loop.percentile(99) / 1e6 - 10, // lag beyond the 10 ms sampling interval
      loopDelayMaxMs: loop.max / 1e6 - 10,
    });
  } else if (m.type === 'close') {
    await srv.close();
    process.send({ type: 'close' });
    process.exit(0);
  }
});
process.on('disconnect', () => process.exit(0));
process.send({ type: 'ready', url: srv.url, urls: srv.urls, timeOrigin: srv.timeOrigin });
