#!/usr/bin/env node
// npm start: serves www/ and pkg/ from the fault server (same origin as its
// fault endpoints) and prints the URL. Ctrl-C stops it.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../tests/server/server.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const port = Number(process.env.PORT ?? 8080);

let server;
try {
  server = await startServer({ port, staticRoot: root, extraPorts: 3 });
} catch {
  server = await startServer({ port: 0, staticRoot: root, extraPorts: 3 }); // 8080 taken
}
console.log(`stormguard demo: ${server.url}/www/`);
const stop = async () => {
  await server.close();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
