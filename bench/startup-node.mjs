// One cold start-up in Node, in a process of its own (bench/startup.mjs spawns one per load):
// import() of a package's Node entry, createClientSync() (a client whose calls can be made now),
// its `ready` (the engine's wasm read, compiled and instantiated), and the answer of a request()
// made at once (it waits for the engine: there is no boot build outside a page). Prints the times in
// ms from just before the import(), as JSON.
//   node bench/startup-node.mjs <package folder> <server URL>
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [dir, origin] = process.argv.slice(2);
const t0 = performance.now();
const m = await import(pathToFileURL(join(dir, 'node.js')).href);
const importMs = performance.now() - t0;
const c = m.createClientSync();
const clientMs = performance.now() - t0;
const answer = c.request(`${origin}/status/200?id=startup-node&n=${Math.random()}`);
await c.ready;
const readyMs = performance.now() - t0;
await answer;
const answerMs = performance.now() - t0;
c.close();
console.log(JSON.stringify({ importMs, clientMs, readyMs, answerMs, processMs: t0 }));
