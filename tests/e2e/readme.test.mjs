// The README's option reference against the code, so the two cannot drift:
// every default in README.md's "Client options" table equals the Rust
// `Default` impl in src/policy/ (options.rs, or the policy's own file), every option of the TypeScript
// types (pkg-template/index.d.ts) and of API.md's ClientOptions is in the
// table (and nothing else is), and the per-call table names every option of
// CallOptions, RequestOptions and SchemaOptions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './browser.mjs';

const readme = readFileSync(join(root, 'README.md'), 'utf8');
// The policy core's configs and their defaults: options.rs and each policy's own file (breaker.rs,
// budget.rs, limiter.rs, retry.rs, ...), where its config lives beside it.
const rust = readdirSync(join(root, 'src/policy')).filter((f) => f.endsWith('.rs'))
  .map((f) => readFileSync(join(root, 'src/policy', f), 'utf8')).join('\n');
const dts = readFileSync(join(root, 'pkg-template/index.d.ts'), 'utf8');
const apiPath = join(root, '../shared/API.md');
const api = existsSync(apiPath) ? readFileSync(apiPath, 'utf8') : null;

/** The rows of the first markdown table under `heading`: [{ option, cells }]. */
function table(heading) {
  const start = readme.indexOf(`\n${heading}\n`);
  assert.ok(start >= 0, `README.md has a "${heading}" section`);
  const lines = readme.slice(start + heading.length + 2).split('\n');
  const first = lines.findIndex((l) => l.startsWith('|'));
  const rows = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith('|')) break;
    // Split on pipes that are not escaped (\|) inside a cell.
    const cells = line.slice(1, -1).split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, '|'));
    const m = /^`([\w.]+)`$/.exec(cells[0]);
    assert.ok(m, `an option cell is one code span: ${cells[0]}`);
    rows.push({ option: m[1], cells });
  }
  assert.ok(rows.length > 0, `the "${heading}" table has rows`);
  return rows;
}

/** A README default cell as a value: a code span is parsed as JS literal, other text kept as words. */
function readmeValue(cell) {
  const m = /^`([^`]+)`$/.exec(cell);
  if (!m) return { words: cell };
  const text = m[1];
  if (/^-?[\d.]+$/.test(text)) return Number(text);
  if (text === 'true' || text === 'false') return text === 'true';
  if (/^'[^']*'$/.test(text)) return text.slice(1, -1);
  if (text.startsWith('[')) return JSON.parse(text.replace(/'/g, '"'));
  return { code: text };
}

const camel = (snake) => snake.replace(/_([a-z])/g, (_, c) => c.toUpperCase());

/** `impl Default for <Type> { ... Self { field: expr, ... } }` -> { field: expr } */
function rustDefaults(type) {
  const m = new RegExp(`impl Default for ${type} \\{[\\s\\S]*?Self \\{([\\s\\S]*?)\\n\\s*\\}\\n\\s*\\}`).exec(rust);
  assert.ok(m, `src/policy/ has impl Default for ${type}`);
  const fields = {};
  for (const f of m[1].matchAll(/^\s*(\w+): (.+?),?\s*$/gm)) fields[f[1]] = f[2];
  // `Self { max: 6, queue: 100 }` on one line
  if (Object.keys(fields).length === 0) {
    for (const f of m[1].matchAll(/(\w+): ([^,}]+)/g)) fields[f[1]] = f[2].trim();
  }
  assert.ok(Object.keys(fields).length > 0, `parsed the fields of ${type}`);
  return fields;
}

function rustConst(name) {
  const m = new RegExp(`const ${name}: \\[[^\\]]+\\] = \\[([^\\]]*)\\];`).exec(rust);
  assert.ok(m, `src/policy/ has const ${name}`);
  return m[1].split(',').map((s) => s.trim()).filter(Boolean)
    .map((s) => (s.startsWith('"') ? JSON.parse(s) : Number(s)));
}

function rustScalarConst(name) {
  const m = new RegExp(`const ${name}: \\w+ = ([^;]+);`).exec(rust);
  assert.ok(m, `src/policy/ has const ${name}`);
  return rustValue(m[1].trim());
}

/** A Rust default expression as the value the README must show. */
function rustValue(expr) {
  if (/^-?[\d_]+(\.[\d_]+)?$/.test(expr)) return Number(expr.replace(/_/g, ''));
  if (expr === 'true' || expr === 'false') return expr === 'true';
  if (expr === 'None') return { words: 'off' };
  if (/^Some\(\w+::default\(\)\)$/.test(expr)) return { words: 'on' };
  if (/^Some\([\d_]+\)$/.test(expr)) return Number(expr.slice(5, -1).replace(/_/g, ''));
  let m = /^Jitter::(\w+)$/.exec(expr);
  if (m) return m[1].toLowerCase();
  m = /^"([^"]*)"\.to_owned\(\)$/.exec(expr);
  if (m) return m[1];
  m = /^(\w+)\.(to_vec\(\)|iter\(\)\.map.*collect\(\))$/.exec(expr);
  if (m) return rustConst(m[1]);
  m = /^[A-Z][A-Z0-9_]+$/.exec(expr);
  if (m) return rustScalarConst(expr);
  throw new Error(`no reading for the Rust default expression ${expr}`);
}

// Rust config type -> README prefix.
const GROUPS = {
  ClientConfig: '', RetryConfig: 'retry.', BudgetConfig: 'budget.', BreakerConfig: 'breaker.',
  LimiterConfig: 'concurrency.', StorageConfig: 'storage.',
};
// Rust fields that are not one option of the same name: the options they stand
// for and the Rust expression of each one's default.
const DERIVED = {
  'BreakerConfig.adaptive_k': { 'breaker.mode': '"binary".to_owned()', 'breaker.k': 'DEFAULT_ADAPTIVE_K' },
  // `hedge: None` is API.md's `hedge: false`.
  'ClientConfig.hedge': { hedge: 'false' },
};
// Options that exist only at the JS boundary (no field in ClientConfig) and what the README says of them.
const JS_ONLY = {
  baseUrl: { code: 'location.href' }, headers: { words: 'none' }, gatewayTimeoutMs: { words: 'unset' },
  wasm: { words: 'the file beside the package' }, // read by the JS loader (pkg-template/core.js), not the engine
  fetch: { words: 'the global fetch at each attempt' },
  auth: { words: 'none' }, hooks: { words: 'none' }, // functions, kept by the client's wrapper (core.js UserFns)
  'retry.retryOn': { words: 'none' }, // a function, kept beside the call (src/web/call.rs), called through the UserFns
};

test('every default in the README table equals the Rust Default impls', (t) => {
  const rows = new Map(table('### Client options').map((r) => [r.option, readmeValue(r.cells[2])]));
  const seen = new Set();
  for (const [type, prefix] of Object.entries(GROUPS)) {
    for (const [field, fieldExpr] of Object.entries(rustDefaults(type))) {
      const options = DERIVED[`${type}.${field}`] ?? { [prefix + camel(field)]: fieldExpr };
      for (const [option, expr] of Object.entries(options)) {
        assert.ok(rows.has(option), `README lists ${option} (field ${field} of ${type}; if the field is not `
          + 'an option of that name, map it in DERIVED in this file)');
        assert.deepEqual(rows.get(option), rustValue(expr), `README default of ${option} vs Rust \`${expr}\``);
        seen.add(option);
      }
    }
  }
  for (const [option, value] of Object.entries(JS_ONLY)) {
    assert.deepEqual(rows.get(option), value, `README default of ${option}`);
    seen.add(option);
  }
  const extra = [...rows.keys()].filter((o) => !seen.has(o));
  assert.deepEqual(extra, [], 'README lists no option without a default in the code');
  t.diagnostic(`${seen.size} options checked against the code`);
});

/** Property names of `export interface Name { ... }` in index.d.ts. */
function dtsProps(name) {
  const m = new RegExp(`export interface ${name}(?:<[^>]*>)?(?: extends [\\w<>, ]+)? \\{([\\s\\S]*?)\\n\\}`).exec(dts);
  assert.ok(m, `index.d.ts declares ${name}`);
  return [...m[1].matchAll(/^\s*(\w+)\??:/gm)].map((p) => p[1]);
}

test('the README table names exactly the options of the TypeScript types', (t) => {
  const readmeOptions = table('### Client options').map((r) => r.option).sort();
  const typed = [
    ...dtsProps('ClientOptions'),
    ...dtsProps('RetryOptions').map((p) => `retry.${p}`),
    ...dtsProps('BudgetOptions').map((p) => `budget.${p}`),
    ...dtsProps('BreakerOptions').map((p) => `breaker.${p}`),
    ...dtsProps('ConcurrencyOptions').map((p) => `concurrency.${p}`),
    ...dtsProps('StorageOptions').map((p) => `storage.${p}`),
  ].sort();
  // API.md's client options whose README rows were written before the branches that build them
  // (issue 24: fetch; issue 25: auth, hooks) were merged; once index.d.ts declares them this is a no-op.
  const ahead = ['fetch', 'auth', 'hooks'].filter((o) => !typed.includes(o));
  const documentedAhead = readmeOptions.filter((o) => ahead.includes(o));
  if (documentedAhead.length) t.diagnostic(`in API.md and the README, not yet in index.d.ts: ${documentedAhead.join(', ')}`);
  assert.deepEqual(readmeOptions.filter((o) => !documentedAhead.includes(o)), typed);
});

/** API.md's `interface Name { ... }` block: [{ name, comment, inline }] per property line. */
function apiProps(name) {
  const m = new RegExp(`interface ${name}(?:<[^>]*>)?(?: extends [\\w<>, ]+)? \\{([\\s\\S]*?)\\n\\}`).exec(api);
  assert.ok(m, `API.md declares ${name}`);
  const props = [];
  for (const line of m[1].split('\n')) {
    const p = /^\s*(\w+)\??:\s*(.*)$/.exec(line);
    if (!p) continue;
    props.push({ name: p[1], rest: p[2] });
    // More members on the same line (`timeoutMs?: number; deadlineMs?: number;`), outside braces and comments.
    const code = p[2].replace(/\/\/.*$/, '').replace(/\{[^}]*\}/g, '{}');
    for (const more of code.matchAll(/;\s*(\w+)\??:/g)) props.push({ name: more[1], rest: '' });
  }
  return props;
}

/** "default X" in an API.md comment, or a /* X *\/ inline default. */
function apiDefault(text) {
  const m = /default (\[[^\]]*\]|[^;]+?)\s*(?:;|$)/.exec(text);
  if (!m) return undefined;
  const v = m[1].trim();
  if (/^-?[\d.]+$/.test(v)) return Number(v);
  if (v === 'true' || v === 'false') return v === 'true';
  if (/^'[^']*'$/.test(v)) return v.slice(1, -1);
  if (v.startsWith('[')) return JSON.parse(v.replace(/'/g, '"'));
  return { words: v };
}

test("API.md's ClientOptions and their stated defaults are all in the README table", { skip: api ? false : `no ${apiPath}` }, (t) => {
  const rows = new Map(table('### Client options').map((r) => [r.option, readmeValue(r.cells[2])]));
  const expected = new Map();
  for (const p of apiProps('ClientOptions')) {
    expected.set(p.name, apiDefault(p.rest));
    // concurrency / storage are declared inline: `{ max?: number /* 6 */; ... }`
    for (const inner of p.rest.matchAll(/(\w+)\?: [\w ]+?\/\* (.+?) \*\//g)) {
      expected.set(`${p.name}.${inner[1]}`, apiDefault(`default ${inner[2]}`));
    }
  }
  for (const [iface, prefix] of [['RetryOptions', 'retry.'], ['BudgetOptions', 'budget.'], ['BreakerOptions', 'breaker.']]) {
    for (const p of apiProps(iface)) expected.set(prefix + p.name, apiDefault(p.rest));
  }
  let compared = 0;
  for (const [option, value] of expected) {
    assert.ok(rows.has(option), `README lists ${option} (API.md)`);
    if (typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean' || Array.isArray(value)) {
      assert.deepEqual(rows.get(option), value, `README default of ${option} vs API.md`);
      compared++;
    } else if (value?.words === 'off') {
      assert.deepEqual(rows.get(option), { words: 'off' }, `README default of ${option} vs API.md`);
      compared++;
    }
  }
  t.diagnostic(`${expected.size} API.md options found in the README, ${compared} stated defaults compared`);
  // Options added by later issues (breaker.mode, breaker.k) may be in the README before API.md;
  // the TypeScript test above keeps the README from listing options the package does not have.
});

test("the FetchInit table names exactly the fields of index.d.ts's and API.md's FetchInit, each fetch's default", () => {
  const rows = table("### fetch's own options (FetchInit)");
  assert.deepEqual(rows.map((r) => r.option).sort(), dtsProps('FetchInit').sort());
  if (api) assert.deepEqual(rows.map((r) => r.option).sort(), apiProps('FetchInit').map((p) => p.name).sort());
  for (const r of rows) assert.match(r.cells[2], /^fetch's/, `${r.option}: fetch's own default`);
  assert.match(dts, /export interface ClientOptions extends FetchInit \{/);
  assert.match(dts, /export interface RequestOptions extends CallOptions, FetchInit \{/);
});

test('the per-call table names every option of CallOptions, RequestOptions and SchemaOptions', () => {
  const rows = table('### Per-call options').map((r) => r.option).sort();
  const fromDts = [...dtsProps('CallOptions'), ...dtsProps('RequestOptions')];
  // SchemaOptions comes with schema(); until index.d.ts has it, API.md (when present) names its options.
  if (/export interface SchemaOptions/.test(dts)) fromDts.push(...dtsProps('SchemaOptions'));
  else if (api) fromDts.push(...apiProps('SchemaOptions').map((p) => p.name));
  const names = [...new Set(fromDts)].sort();
  assert.deepEqual(rows, names);
  if (api) {
    const fromApi = new Set(['CallOptions', 'RequestOptions', 'SchemaOptions'].flatMap((n) => apiProps(n).map((p) => p.name)));
    assert.deepEqual([...fromApi].filter((o) => !rows.includes(o)), [], "API.md's per-call options missing from the README");
  }
});

test('the README shows each way in: plain ESM, Vite + React, Vue, Node, a worker', () => {
  for (const heading of ['## Usage', '### Plain ESM in a page (no bundler)', '### Vite + React', '### Vue 3', '### Node', '### In a Web Worker', '## Options']) {
    assert.ok(readme.includes(`\n${heading}\n`), `README has "${heading}"`);
  }
  for (const snippet of ["from 'stormguard/react'", "from 'stormguard/vue'", "optimizeDeps: { exclude: ['stormguard'] }", 'type="importmap"', "type: 'module'"]) {
    assert.ok(readme.includes(snippet), `README shows ${snippet}`);
  }
});

test("the README's browser-test commands are the ones npm test runs, and name a real test", () => {
  const start = readme.indexOf('\n## Running one test\n');
  assert.ok(start >= 0, 'README.md has a "## Running one test" section');
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(start))[1];
  const testSh = readFileSync(join(root, 'scripts/test.sh'), 'utf8');

  // The server as npm test starts it, on the port whose URL is exported.
  const server = /^node tests\/server\/server\.mjs(.*?) --port (\d+) &$/m.exec(block);
  assert.ok(server, 'README starts the fault server on a fixed --port, in the background');
  assert.match(block, new RegExp(`^export STORMGUARD_FAULT_URL=http://127\\.0\\.0\\.1:${server[2]}$`, 'm'));
  const npmServer = /^node tests\/server\/server\.mjs(.*?) >/m.exec(testSh);
  assert.ok(npmServer, 'scripts/test.sh starts the fault server');
  assert.equal(server[1].trim(), npmServer[1].trim(), "the README's server flags are scripts/test.sh's");

  // Each wasm-pack line: npm test runs it in that browser with no filter.
  const runs = [...block.matchAll(/^wasm-pack test --headless --(chrome|firefox)(?: --test (\w+) -- (\w+))?\s/gm)];
  assert.deepEqual([...new Set(runs.map((r) => r[1]))].sort(), ['chrome', 'firefox']);
  for (const [, browser, file, filter] of runs) {
    assert.match(testSh, new RegExp(`^wasm-pack test --mode no-install --headless --${browser}$`, 'm'));
    if (!file) continue;
    const src = readFileSync(join(root, `tests/${file}.rs`), 'utf8');
    const names = [...src.matchAll(/#\[wasm_bindgen_test\]\s*(?:async )?fn (\w+)/g)].map((m) => m[1]);
    assert.ok(names.some((n) => n.includes(filter)), `tests/${file}.rs has a browser test matching "${filter}"`);
  }
});

test("the README's set-up is two commands, npm start and npm test, both real scripts", () => {
  const start = readme.indexOf('\n## Set-up\n');
  assert.ok(start >= 0, 'README.md has a "## Set-up" section');
  assert.ok(start < readme.indexOf('\n## Usage\n'), 'the set-up comes before the usage');
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(start))[1];
  const commands = block.split('\n').map((l) => l.replace(/#.*$/, '').trim()).filter(Boolean);
  assert.deepEqual(commands, ['npm start', 'npm test']);
  const scripts = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts;
  assert.ok(scripts.start && scripts.test, 'package.json has start and test scripts');
});

test('every README section cited in the repository is a heading of README.md, and nothing cites a file outside the repository', () => {
  const headings = new Set();
  let fence = false;
  for (const line of readme.split('\n')) {
    if (/^\s*```/.test(line)) fence = !fence;
    const m = !fence && /^#{1,6}\s+(.+?)\s*$/.exec(line);
    if (m) headings.add(m[1].replace(/`/g, '').trim());
  }
  const missing = [];
  const outside = [];
  // The contract and working notes kept beside the repository, never in it: a comment citing one
  // sends the reader to a file they do not have (say the rule itself, or cite a README section).
  const elsewhere = /\b(?:API|TOOLCHAIN|BENCHMARKS|PARALLEL)\.md\b|\.\.\/shared\b|\/work\/shared\b/;
  const check = (rel) => {
    const text = readFileSync(join(root, rel), 'utf8');
    for (const c of text.matchAll(/README(?:\.md)?,\s*["“]([^"”\n]+)["”]/g)) {
      if (c[1] !== 'Section' && !headings.has(c[1])) missing.push(`${rel}: "${c[1]}"`);
    }
    // (npm-readme.test.mjs checks that the shipped README names no API.md.)
    if (elsewhere.test(text) && rel !== 'tests/e2e/npm-readme.test.mjs') outside.push(`${rel}: ${text.match(elsewhere)[0]}`);
  };
  const walk = (dir) => {
    for (const name of readdirSync(join(root, dir))) {
      const rel = `${dir}/${name}`;
      // bench/apps/*/dist: bundles hold the package's messages, which cite README sections as they were when built
      if (/node_modules|^tests\/apps\/[^/]+\/(dist|\.next)|^bench\/results\/(quick|dev)|^bench\/apps\/[^/]+\/dist/.test(rel)) continue;
      if (statSync(join(root, rel)).isDirectory()) walk(rel);
      else if (/\.(rs|m?js|cjs|ts|sh|md|toml)$/.test(name) && rel !== 'tests/e2e/readme.test.mjs') check(rel);
    }
  };
  for (const dir of ['src', 'pkg-template', 'scripts', 'tests', 'bench', 'www', '.cargo']) walk(dir);
  for (const file of ['README.md', 'ARCHITECTURE.md', 'Cargo.toml']) if (existsSync(join(root, file))) check(file);
  assert.deepEqual(missing, [], 'README sections cited that README.md has no heading for');
  assert.deepEqual(outside, [], 'files that cite a file outside the repository (say the rule, or cite a README section)');
});
