// TanStack Query v5 over stormguard (issue 25, item 6): tests/apps/tanstack,
// a Vite + React 19 + strict TypeScript app written as the README's recipe
// ("TanStack Query"), installs the packed package as a user would, is
// type-checked (`tsc --noEmit`) and built, and is driven in Chromium:
//   - the recipe is the README's (api.ts and recover.ts character for
//     character; the component's queryFn and narrowing);
//   - its narrowing of TanStack's `Error` compiles under strict, and a wrong
//     one does not;
//   - a failing query makes exactly stormguard's attempts (the server's count
//     == stats().attempts == retry.maxAttempts == 3; TanStack called the
//     query function once) and renders the narrowed error with its status;
//   - with the breaker then open, a refetch fails at once (CIRCUIT_OPEN,
//     nothing sent); with the README's optional QueryClient, TanStack waits
//     retryInMs and the breaker's probe brings the data;
//   - TanStack's signal reaches the wire: unmounting the component, or
//     changing the query key, closes the request at the server.
// The built app is served by a fault server of its own (staticRoot), so its
// queries are same-origin and the app needs no baseUrl.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchChromium, root } from './browser.mjs';
import { startServer } from '../server/server.mjs';
import { faultLog, installApp, packTarball, readmeBlock, run, viteBuild, watchPage } from './apps.mjs';

const readme = readFileSync(join(root, 'README.md'), 'utf8');
const RUN = Date.now().toString(36);
const DOC = { title: 'Fleet report' };
const OTHER = { title: 'Second source' };

let work, dir, site, browser, page, errors, log, arrived, closedByClient;

before(async () => {
  assert.ok(existsSync(join(root, 'pkg/package.json')), 'pkg/ is missing: run `node scripts/build.mjs` first');
  work = mkdtempSync(join(tmpdir(), 'stormguard-tanstack-'));
  dir = await installApp('tanstack', work, await packTarball(work));
  site = await startServer({ staticRoot: await viteBuild(dir) });
  ({ log, arrived, closedByClient } = faultLog(site.url));
  browser = await launchChromium();
  page = await browser.newPage();
  errors = watchPage(page);
});

after(async () => {
  await browser?.close();
  await site?.close();
  if (work && !process.env.STORMGUARD_KEEP_APPS) rmSync(work, { recursive: true, force: true });
});

const json = (id, doc) => `/json?id=${id}&body=${encodeURIComponent(JSON.stringify(doc))}`;
const open = (params) => page.goto(`${site.url}/?${new URLSearchParams(params)}`);
const view = (state) => page.waitForSelector(`[data-testid="view"][data-state="${state}"]`, { timeout: 15_000 });
const attr = (testid, name) => page.getAttribute(`[data-testid="${testid}"]`, name);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('the app is the README recipe: api.ts and recover.ts as written, its queryFn and narrowing', () => {
  for (const file of ['api.ts', 'recover.ts']) {
    assert.equal(readFileSync(join(root, 'tests/apps/tanstack/src', file), 'utf8'), readmeBlock(readme, file), `src/${file} is README's`);
  }
  const component = /```tsx\n([\s\S]*?useQuery[\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(component, 'README has the component');
  const app = readFileSync(join(root, 'tests/apps/tanstack/src/App.tsx'), 'utf8');
  const queryFn = /queryFn: \(\{ signal \}\) => api\.request<\w+>\([^)]*, \{ signal \}\),/;
  assert.match(component, queryFn);
  assert.match(app, queryFn);
  const narrowing = /\{(isStormguardError\(error\) && error\.code === 'HTTP' \? [^}]*\}[^}]*)\}<\/p>/.exec(component)?.[1];
  assert.ok(narrowing, "README's component narrows with isStormguardError(error) && error.code === 'HTTP'");
  assert.ok(app.includes(narrowing), `App.tsx renders ${narrowing}`);
});

test('tsc --noEmit under strict: the narrowing compiles, and a wrong one does not', async () => {
  const tsc = [join(dir, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', dir];
  const tsconfig = readFileSync(join(dir, 'tsconfig.json'), 'utf8');
  assert.match(tsconfig, /"strict": true/);
  await run(process.execPath, tsc, { cwd: dir }).catch((e) => assert.fail(`tsc failed:\n${e.stdout}${e.stderr}`));

  const appPath = join(dir, 'src/App.tsx');
  const app = readFileSync(appPath, 'utf8');
  const right = "isStormguardError(error) && error.code === 'HTTP' ? `Error ${error.status}`";
  assert.ok(app.includes(right));
  const wrong = {
    // TanStack types `error` as Error: without the guard there is no `code`, and no `status`.
    "error.code === 'HTTP' ? `Error ${error.status}`": /TS2339: Property 'code' does not exist on type 'Error'/,
    // Narrowed to another class: no `status` on a TimeoutError.
    "isStormguardError(error) && error.code === 'TIMEOUT' ? `Error ${error.status}`": /TS2339: Property 'status' does not exist on type 'TimeoutError'/,
  };
  try {
    for (const [expression, message] of Object.entries(wrong)) {
      writeFileSync(appPath, app.replace(right, expression));
      const out = await run(process.execPath, tsc, { cwd: dir }).then(
        () => assert.fail(`tsc accepted ${expression}`),
        (e) => `${e.stdout}${e.stderr}`,
      );
      assert.match(out, message);
    }
  } finally {
    writeFileSync(appPath, app);
  }
});

test('a failing query makes exactly stormguard\'s 3 attempts and renders the narrowed error; a refetch meets the open breaker', async () => {
  const id = `tq-fail-${RUN}`;
  await open({ url: `/status/503?id=${id}` });
  await view('error');
  assert.equal(await page.textContent('[data-testid="message"]'), 'Error 503', 'HttpError narrowed: its status shown');
  assert.equal(await attr('error', 'data-code'), 'HTTP');
  assert.equal(await attr('error', 'data-attempts'), '3', 'error.attempts');
  assert.equal(await attr('stats', 'data-attempts'), '3', 'stats().attempts');
  assert.equal((await log(id)).length, 3, 'requests at the server == retry.maxAttempts');
  assert.equal(await attr('view', 'data-failures'), '1', 'TanStack called the query function once');

  // The three failures opened the endpoint's breaker: a refetch now fails at once, sending nothing,
  // and the narrowing's other branch shows the CircuitOpenError's message.
  await page.click('[data-testid="refetch"]');
  await page.waitForSelector('[data-testid="error"][data-code="CIRCUIT_OPEN"]', { timeout: 5000 });
  assert.match(await page.textContent('[data-testid="message"]'), /circuit/i);
  await sleep(1500); // TanStack's first retry would have gone out after 1 s
  // Nothing through the open breaker: a request after the third is the breaker's probe, no sooner
  // than its 2 s open period after the third failure (a busy machine can click Refetch that late: the
  // probe fails, the breaker opens again and the refetch's retry meets it). At most that one.
  const sent = await log(id);
  assert.ok(sent.length <= 4, `${sent.length} requests: no TanStack retry, no request through the open breaker`);
  for (const e of sent.slice(3)) {
    assert.ok(e.t - sent[2].t >= 1900, `a request ${Math.round(e.t - sent[2].t)} ms after the third failure, within its open period`);
  }
  assert.equal(await attr('stats', 'data-attempts'), String(sent.length));
  assert.equal(await attr('view', 'data-failures'), '1');
});

test("TanStack's signal: unmounting the component aborts the request on the wire", async () => {
  const id = `tq-unmount-${RUN}`;
  await open({ url: `/hang?id=${id}` });
  await view('loading');
  await arrived(id);
  await page.click('[data-testid="toggle"]');
  await page.waitForSelector('[data-testid="hidden"]');
  const [entry] = await closedByClient(id);
  // Well before the attempt's 6 s timeout (which starts when it is sent, a little before it arrives).
  assert.ok(entry.closedAt - entry.t < 5000, `closed by the unmount, not the 6 s timeout (${Math.round(entry.closedAt - entry.t)} ms)`);
  assert.equal(entry.serverClosed, false);
  await sleep(300);
  assert.equal((await log(id)).length, 1, 'an aborted call is not retried');
});

test('a new query key aborts the request of the old one', async () => {
  const id = `tq-switch-${RUN}`;
  await open({ url: `/hang?id=${id}`, alt: json(`tq-alt-${RUN}`, OTHER) });
  await view('loading');
  await arrived(id);
  await page.click('[data-testid="switch"]');
  await view('success');
  assert.equal(await page.textContent('[data-testid="title"]'), OTHER.title);
  const [entry] = await closedByClient(id);
  assert.ok(entry.closedAt - entry.t < 5000, `closed by the key change, not the 6 s timeout (${Math.round(entry.closedAt - entry.t)} ms)`);
  assert.equal(entry.serverClosed, false);
});

test("README's optional QueryClient: CIRCUIT_OPEN is retried after retryInMs, and the probe brings the data", async () => {
  // Attempts 1-3 answer 503 (a call's three attempts; the breaker opens), the fourth 200. Refetch
  // must be clicked within the 2 s open period: a busy machine can render the error later than that,
  // and the page is then loaded again (with another id), at most 3 times.
  let id;
  for (let round = 1; ; round++) {
    id = `tq-recover-${RUN}-${round}`;
    await open({ recover: '1', url: `/fail-first?n=3&id=${id}` });
    await view('error');
    assert.equal(await page.textContent('[data-testid="message"]'), 'Error 503');
    const sent = await log(id);
    assert.equal(sent.length, 3);
    assert.equal(await attr('view', 'data-failures'), '1', 'an HttpError is not retried by TanStack');
    if (site.now() - sent[2].t < 1000 || round === 3) break;
  }

  await page.click('[data-testid="refetch"]');
  // The refetch met the open breaker: TanStack holds that failure and waits retryInMs.
  await page.waitForSelector('[data-testid="view"][data-failure-code="CIRCUIT_OPEN"][data-fetching="true"]', { timeout: 5000 });
  assert.equal((await log(id)).length, 3, 'nothing sent through the open breaker');
  await view('success');
  const entries = await log(id);
  assert.equal(entries.length, 4, 'one request after the wait: the probe');
  const gap = entries[3].t - entries[2].t;
  assert.ok(gap >= 1900, `the probe went out when the breaker half-opened, openMs 2000 after the third failure (${Math.round(gap)} ms)`);
  assert.equal(await attr('stats', 'data-attempts'), '4');
});

test('the console shows no uncaught error', () => {
  assert.deepEqual(errors, []);
});
