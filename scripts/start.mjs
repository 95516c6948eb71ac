#!/usr/bin/env node
// npm start: bundles ky and cockatiel for the browser (scripts/vendor.mjs),
// serves the repository root (www/, pkg/, bench/strategies.mjs) from the fault
// server, and prints the demo's URL. Ctrl-C stops it.
//
// The fault server listens on one main port (the page, its control calls) and
// EXTRA_PORTS more ports with the same state. The demo spreads its virtual
// clients over the extra ports: Chromium opens at most 6 HTTP/1.1 connections
// per origin (scheme, host, port), so with one port the browser's own pool,
// not the server, would be what the charts show. The ports are written to
// www/vendor/servers/<main port>.json, which the page reads.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../tests/server/server.mjs';
import { bundleVendor, root, vendorDir } from './vendor.mjs';

// 100 ports: 6 connections each, so no port's limit binds before Chromium's ceiling of 256
// sockets for the whole browser (200 clients = 2 per port).
export const EXTRA_PORTS = 100;

/**
 * Starts the demo: vendor bundles, the fault server with its extra ports, and
 * the page's server list. Returns { server, url, versions, close() }.
 */
export async function startDemo({ port = 0, extraPorts = EXTRA_PORTS } = {}) {
  const versions = await bundleVendor();
  let server;
  try {
    server = await startServer({ port, staticRoot: root, extraPorts });
  } catch (err) {
    if (port === 0 || err.code !== 'EADDRINUSE') throw err;
    server = await startServer({ port: 0, staticRoot: root, extraPorts }); // the port is taken
  }
  const dir = join(vendorDir, 'servers');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${server.port}.json`);
  writeFileSync(file, JSON.stringify({ main: server.url, load: server.urls.slice(1), versions }, null, 1));
  let closing;
  return {
    server,
    versions,
    url: `${server.url}/www/`,
    close() {
      closing ??= (async () => {
        rmSync(file, { force: true });
        await server.close();
      })();
      return closing;
    },
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const demo = await startDemo({ port: Number(process.env.PORT ?? 8080) });
  console.log(`stormguard demo: ${demo.url}`);
  console.log(`  (fault server on port ${demo.server.port}, virtual clients spread over ${demo.server.ports.length - 1} more ports; ` +
    `ky ${demo.versions.ky}, cockatiel ${demo.versions.cockatiel}; Ctrl-C stops it)`);
  const stop = async () => {
    await demo.close();
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
