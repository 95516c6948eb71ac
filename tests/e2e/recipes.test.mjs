// The README's recipes as a new user copies them from the npm page (issue 25,
// item 7): the code blocks of the shipped README (pkg/README.md) "// api.js"
// (auth refresh), "// cookies.js" and "// route.js" (credentials, a cookie
// forwarded on a server) and "// user.ts" (a typed call validated with zod),
// written as they are into tests/apps/recipes, installed with the packed
// package (`npm pack ./pkg`) and zod, type-checked under strict and run in
// Node against the fault server. The recipes call https://api.example.com/:
// the test installs a global fetch (as the README's "Testing with fetch
// mocks" does) that records what each attempt asks of fetch and sends it to
// the fault server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { root } from './browser.mjs';
import { startServer } from '../server/server.mjs';
import { installApp, packTarball, readmeBlock, run } from './apps.mjs';

const readme = readFileSync(join(root, 'pkg/README.md'), 'utf8');
const RUN = Date.now().toString(36);
const hostFetch = globalThis.fetch;

let work, dir, fault;
/** What each request to api.example.com asked of fetch. */
const seen = [];
/** Where a path of api.example.com goes on the fault server (else the same path and query). */
const routes = new Map();

before(async () => {
  assert.ok(existsSync(join(root, 'pkg/package.json')), 'pkg/ is missing: run `node scripts/build.mjs` first');
  work = mkdtempSync(join(tmpdir(), 'stormguard-recipes-'));
  dir = await installApp('recipes', work, await packTarball(work));
  for (const name of ['api.js', 'cookies.js', 'route.js', 'user.ts']) {
    writeFileSync(join(dir, name), readmeBlock(readme, name));
  }
  // user.ts has no type syntax of its own: Node 20 runs it as user.mjs.
  fault = await startServer();
  globalThis.fetch = (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    if (url.origin !== 'https://api.example.com') return hostFetch(input, init);
    seen.push({ path: url.pathname, credentials: request.credentials, cookie: request.headers.get('cookie') });
    const to = routes.get(url.pathname) ?? `${url.pathname}${url.search}`;
    return hostFetch(`${fault.url}${to}`, { method: request.method, headers: request.headers, signal: request.signal });
  };
});

after(async () => {
  globalThis.fetch = hostFetch;
  await fault?.close();
  if (work && !process.env.STORMGUARD_KEEP_APPS) rmSync(work, { recursive: true, force: true });
});

/** The module `name` of the app, evaluated once more for each `run`. */
const load = (name, again = '') => import(`${pathToFileURL(join(dir, name))}${again && `?${again}`}`);
const log = async (id) => (await (await hostFetch(`${fault.url}/_log?id=${id}`)).json()).filter((e) => !e.preflight);

test('auth refresh (// api.js): concurrent 401s make one refresh, and each call is replayed once and succeeds', async () => {
  const { api } = await load('api.js');
  const { session } = await load('session.js');
  session.accessToken = 'expired';
  const id = `recipes-auth-${RUN}`;
  // Three different URLs (no dedupe), each 401 to the expired token after 100 ms.
  const results = await Promise.all(
    [1, 2, 3].map((i) => api.request(`auth?accept=fresh&delay=100&id=${id}&i=${i}`)),
  );
  assert.deepEqual(results.map((r) => r.token), ['fresh', 'fresh', 'fresh']);
  assert.equal(session.renewals, 1, 'one refresh for the three 401s');
  const statuses = (await log(id)).map((e) => e.status);
  assert.deepEqual(statuses.toSorted(), [200, 200, 200, 401, 401, 401], 'each call sent twice: the 401, the replay');
  const stats = api.stats();
  assert.equal(stats.retries, 0, 'a replay is no retry');
  assert.equal(stats.inFlight, 0);
});

test("cookies (// cookies.js, // route.js): credentials 'include' by default, 'omit' for one call; a user's cookie forwarded, an absent one left out", async () => {
  seen.length = 0;
  routes.set('/me', `/cookie?id=recipes-cookie-${RUN}`);
  routes.set('/public/stats', `/echo?id=recipes-cookie-${RUN}`);
  await load('cookies.js');
  assert.deepEqual(
    seen.map((s) => [s.path, s.credentials]),
    [['/me', 'include'], ['/public/stats', 'omit']],
    'what each call asked of fetch',
  );
  const { GET } = await load('route.js');
  const alice = await GET(new Request('http://localhost/api/me', { headers: { cookie: 'sid=alice' } }));
  assert.deepEqual(await alice.json(), { cookie: 'sid=alice' }, "the user's cookie reached the API");
  const anonymous = await GET(new Request('http://localhost/api/me'));
  assert.deepEqual(await anonymous.json(), { cookie: null }, 'no cookie header sent for an absent one');
  assert.deepEqual(seen.slice(2).map((s) => s.cookie), ['sid=alice', null]);
});

test('a typed, validated call (// user.ts): tsc infers the schema\'s output; a good value resolves, a bad one is a ParseError with its issues, not retried', async () => {
  // Typed: `user` is { id: number; name: string } under strict, not unknown or any.
  writeFileSync(
    join(dir, 'typed.ts'),
    "import { user } from './user.js';\nconst name: string = user.name;\nconst id: number = user.id;\n" +
      '// @ts-expect-error: the schema has no such field\nuser.email;\nexport { name, id };\n',
  );
  // (The block itself, and with an export for typed.ts and this test to see `user`.)
  for (const file of ['user.ts', 'user.mjs']) writeFileSync(join(dir, file), `${readmeBlock(readme, 'user.ts')}export { user };\n`);
  const tsc = join(dir, 'node_modules/typescript/bin/tsc');
  await run(process.execPath, [tsc, '-p', '.'], { cwd: dir }).catch((e) => {
    assert.fail(`tsc failed:\n${e.stdout}${e.stderr}`);
  });
  const good = `/json?id=recipes-user-${RUN}&body=${encodeURIComponent(JSON.stringify({ id: 42, name: 'Ada' }))}`;
  routes.set('/users/42', good);
  assert.deepEqual((await load('user.mjs', 'good')).user, { id: 42, name: 'Ada' });
  const bad = `/json?id=recipes-bad-${RUN}&body=${encodeURIComponent(JSON.stringify({ id: 42, name: 7 }))}`;
  routes.set('/users/42', bad);
  await assert.rejects(load('user.mjs', 'bad'), (e) => {
    assert.equal(e.name, 'ParseError');
    assert.equal(e.code, 'PARSE');
    assert.deepEqual(e.issues.map((i) => i.path), [['name']]);
    return true;
  });
  assert.equal((await log(`recipes-bad-${RUN}`)).length, 1, 'not retried');
});
