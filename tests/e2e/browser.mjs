// Shared by the end-to-end tests: Debian's Chromium through playwright-core
// (no tool may download its own browser here), with the flags this machine
// needs (below), and the fault server started in-process.
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';
import { before, after } from 'node:test';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../server/server.mjs';

export const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

export const CHROMIUM_ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-dev-shm-usage',
];

export function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
  });
}

/**
 * A static server for the repository (pages and pkg/) and a fault server on
 * another port, so every call in a page is cross-origin and exercises CORS;
 * `other`, the fault server on a third port: a third origin (a third party's).
 */
export async function startServers() {
  const site = await startServer({ staticRoot: root });
  const fault = await startServer({ extraPorts: 1 });
  return {
    site: site.url,
    fault: fault.url,
    other: fault.urls[1],
    /** The wall-clock time (epoch ms, as a page's Date.now()) of the fault server's log time `t`. */
    faultWall: (t) => t + Date.now() - fault.now(),
    close: () => Promise.all([site.close(), fault.close()]),
  };
}

/**
 * A test file's servers (startServers()) and Chromium, started before its tests and closed after
 * them: the tests read `env.servers` and `env.browser` of the object returned.
 */
export function serversAndChromium() {
  const env = { servers: undefined, browser: undefined };
  before(async () => {
    env.servers = await startServers();
    env.browser = await launchChromium();
  });
  after(async () => {
    await env.browser?.close();
    await env.servers?.close();
  });
  return env;
}

/** Collects console errors and uncaught exceptions of a page. */
export function watchErrors(page) {
  const errors = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  return errors;
}

/**
 * Opens `url`, a page whose module script makes its client and sets `window.made`, in a new page of
 * `context` with the package's wasm download (its site's pkg/stormguard_bg.wasm) held; resolves once
 * the page has made its client and asked for the wasm: `{ page, errors, answer }`, `answer(fn)`
 * letting the held download go on with `fn(route)`. `setup(page)` runs before the page loads (its
 * routes and listeners).
 */
export async function openWithWasmHeld(context, url, setup) {
  let asked;
  const wasAsked = new Promise((r) => { asked = r; });
  let answer;
  const answered = new Promise((r) => { answer = r; });
  await context.route(new URL('/pkg/stormguard_bg.wasm', url).href, async (route) => {
    asked();
    (await answered)(route);
  });
  const page = await context.newPage();
  await setup?.(page);
  const errors = watchErrors(page);
  await page.goto(url);
  await page.waitForFunction(() => window.made === true);
  await wasAsked;
  return { page, errors, answer };
}

/**
 * Runs `scenario({ fault, id })` in Node, `globalThis.stormguard` set to the package `node` (its
 * pkg/node.js), then in a fresh page (tests/e2e/pages/esm.html, which sets `window.stormguard`),
 * with `env`'s servers and browser (serversAndChromium()); resolves with both results,
 * `{ node, page }`, the ids `${id}-node` and `${id}-page`. Errors in the page's console fail it,
 * but for the lines the console writes for every non-2xx answer (the tests' own).
 */
export async function inBoth({ browser, servers }, node, scenario, id) {
  globalThis.stormguard = node;
  const inNode = await scenario({ fault: servers.fault, id: `${id}-node` });
  const page = await browser.newPage();
  const errors = watchErrors(page);
  try {
    await page.goto(`${servers.site}/tests/e2e/pages/esm.html`);
    await page.waitForFunction(() => window.ready === true);
    const inPage = await page.evaluate(scenario, { fault: servers.fault, id: `${id}-page` });
    assert.deepEqual(errors.filter((e) => !/Failed to load resource: the server responded with a status/.test(e)), []);
    return { node: inNode, page: inPage };
  } finally {
    await page.close();
  }
}
