// The npm page is the user guide (issue 25, item 7): the README shipped in the
// tarball (pkg/README.md, which scripts/build.mjs makes from README.md) is all
// a user of the package sees. Checked here, against the built pkg/:
//   - every option and property the types declare (pkg/index.d.ts: the client
//     and call options, the policies' options, auth, hooks, the error classes
//     and their fields, events, stats) is named in it, in a code span;
//   - every option table gives each option a default;
//   - every link that is not http(s) is an anchor of one of its headings or a
//     file the tarball holds (`npm pack --dry-run --json ./pkg`);
//   - it names no http(s) URL outside ALLOWED_URLS (URLs in code examples may
//     only be on the reserved example hosts), and neither does the package's
//     package.json (the npm page links its repository, homepage and bugs);
//   - every `README, "Section"` the package's code cites names one of its headings;
//   - it is laid out for looking things up (issue 40, item 5): install and a
//     first example of at most 10 lines first, then recipes, then the
//     reference (client methods, options, errors, stats and events) where
//     every option, error class and event has a heading of its own whose
//     entry starts with its default, then the long explanations; no table
//     cell runs over MAX_CELL_WORDS words; and neither it nor README.md
//     names API.md, a file that is in neither the package nor the repository.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './browser.mjs';

const pkg = join(root, 'pkg');
assert.ok(existsSync(join(pkg, 'package.json')), 'pkg/ is missing: run `node scripts/build.mjs` first');
const readme = readFileSync(join(pkg, 'README.md'), 'utf8');
const dts = readFileSync(join(pkg, 'index.d.ts'), 'utf8');

/**
 * Real pages the README may link to. None for now: the package has no
 * repository or home page yet, and a guide that needs no outside page cannot
 * send its reader to a dead one.
 */
const ALLOWED_URLS = new Set([]);
/** Hosts reserved for examples (RFC 2606) and loopback: allowed in code examples only. */
const EXAMPLE_HOSTS = /^(?:[\w-]+\.)*example\.(?:com|org|net)$|^localhost$|^127\.0\.0\.1$/;

// ---- Reading the README ----------------------------------------------------

/** The README without its fenced code blocks (their lines blanked), and the blocks' text. */
function splitFences(md) {
  const prose = [];
  const code = [];
  let fence = null;
  for (const line of md.split('\n')) {
    const m = /^\s*(```+|~~~+)/.exec(line);
    if (fence) {
      if (m && m[1].startsWith(fence)) fence = null;
      else code.push(line);
      prose.push('');
    } else if (m) {
      fence = m[1];
      prose.push('');
    } else {
      prose.push(line);
    }
  }
  return { prose: prose.join('\n'), code: code.join('\n') };
}

const { prose, code: codeBlocks } = splitFences(readme);
/** Prose without inline code spans. */
const plainProse = prose.replace(/(`+)[\s\S]*?\1/g, ' ');
/** The text of every inline code span. */
const codeSpans = [...prose.matchAll(/(`+)([\s\S]*?)\1/g)].map((m) => m[2].trim());

/** Headings as written (markdown and code marks removed), and their GitHub-style anchors. */
const headings = [];
const anchors = new Set();
{
  const seen = new Map();
  for (const m of prose.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const text = m[1].replace(/`/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').trim();
    headings.push(text);
    let slug = text.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    if (n > 0) slug = `${slug}-${n}`;
    anchors.add(slug);
  }
}

// ---- Reading the types -------------------------------------------------------

/** index.d.ts without comments (string literals kept). */
const types = dts.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/[^\n]*/g, '');

/** The text between the `{` at `open` and its matching `}`. */
function braced(text, open) {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === '{') depth++;
    else if (text[i] === '}' && --depth === 0) return text.slice(open + 1, i);
  }
  throw new Error(`unbalanced braces in index.d.ts after offset ${open}`);
}

/** Member names of a type body: `name?:`, `readonly name:`, `name(...)` at its top level. */
function members(body) {
  let flat = '';
  let depth = 0;
  for (let i = 0; i < body.length; i++) {
    const ch = body[i];
    const arrow = ch === '>' && body[i - 1] === '='; // `=>` closes nothing
    if (ch === '{' || ch === '(' || ch === '<' || ch === '[') depth++;
    if (depth === 0) flat += ch;
    if (ch === '}' || ch === ')' || (ch === '>' && !arrow) || ch === ']') depth--;
    if (depth === 1 && (ch === '(' || ch === '<')) flat += ch; // keep `name(` and `name<` visible
  }
  return [...flat.matchAll(/(?:^|[;\n])\s*(?:readonly\s+)?(\w+)\??\s*[:(<]/g)]
    .map((m) => m[1])
    .filter((name) => name !== 'constructor');
}

/**
 * The member names of an exported interface, object type or `Pick<X, 'a' | 'b'>`
 * alias named `name` in index.d.ts; null when it declares no such type.
 */
function declared(name) {
  const iface = new RegExp(`export (?:declare )?interface ${name}\\b[^{]*\\{`).exec(types);
  if (iface) return members(braced(types, iface.index + iface[0].length - 1));
  const alias = new RegExp(`export type ${name}\\b[^=]*=\\s*`).exec(types);
  if (!alias) return null;
  const rest = types.slice(alias.index + alias[0].length);
  if (rest.startsWith('{')) return members(braced(rest, 0));
  const pick = /^Pick<\s*\w+\s*,([^>]*)>/.exec(rest);
  if (pick) return [...pick[1].matchAll(/'(\w+)'/g)].map((m) => m[1]);
  return null;
}

/** Is `name` named in a code span or code block as `name`, `group.name` or `name: ...`? */
function named(name) {
  const re = new RegExp(`^(?:\\w+\\.)*${name}(?![\\w])`);
  if (codeSpans.some((s) => re.test(s))) return true;
  return new RegExp(`(?<![\\w.])${name}\\??:`).test(codeBlocks);
}

// ---- The checks --------------------------------------------------------------

const OPTION_TYPES = [
  'ClientOptions', 'CallOptions', 'RequestOptions', 'SchemaOptions', 'FetchInit', 'RetryOptions',
  'BudgetOptions', 'BreakerOptions', 'ConcurrencyOptions', 'StorageOptions', 'HedgeOptions',
  'AuthOptions', 'Hooks',
];

test('every option the types declare is documented in the shipped README', (t) => {
  const missing = [];
  const found = [];
  for (const type of OPTION_TYPES) {
    const names = declared(type);
    if (!names) continue;
    found.push(`${type} (${names.length})`);
    for (const n of names) if (!named(n)) missing.push(`${type}.${n}`);
  }
  assert.ok(found.length >= 8, `index.d.ts declares the option types (found ${found.join(', ')})`);
  t.diagnostic(`checked ${found.join(', ')}`);
  assert.deepEqual(missing, [], 'options of index.d.ts that pkg/README.md does not name (in a code span)');
});

test('every error class, error field, event and stat is documented in the shipped README', () => {
  const missing = [];
  const classes = [...types.matchAll(/export declare class (\w+) extends (\w+)\s*\{/g)];
  assert.ok(classes.length >= 9, 'index.d.ts declares the error classes');
  for (const c of classes) {
    if (!named(c[1])) missing.push(c[1]);
    for (const f of members(braced(types, c.index + c[0].length - 1))) {
      if (!named(f)) missing.push(`${c[1]}.${f}`);
    }
  }
  const codes = [...new Set([...types.matchAll(/readonly code: '(\w+)'/g)].map((m) => m[1]))];
  for (const code of codes) if (!named(code) && !readme.includes(`'${code}'`)) missing.push(`code ${code}`);
  const events = /export type EventName =([^;]*);/.exec(types);
  assert.ok(events, 'index.d.ts declares EventName');
  for (const [, e] of events[1].matchAll(/'(\w+)'/g)) {
    if (!new RegExp(`\`'?${e}'?\``).test(prose)) missing.push(`event '${e}'`);
  }
  for (const type of ['Stats', 'StormguardEvent', 'SchemaResult', 'BreakerSnapshot']) {
    for (const f of declared(type) ?? []) if (!named(f)) missing.push(`${type}.${f}`);
  }
  for (const fn of ['createClient', 'createClientSync', 'isStormguardError', 'request', 'fetch', 'schema', 'stats', 'breakers', 'on', 'close', 'extend']) {
    if (fn === 'extend' && !/\bextend\(/.test(types)) continue;
    if (!codeSpans.some((s) => s.startsWith(`${fn}(`) || s.includes(`.${fn}(`)) && !codeBlocks.includes(`.${fn}(`)) missing.push(`${fn}()`);
  }
  assert.deepEqual(missing, [], 'names of index.d.ts that pkg/README.md does not document');
});

test('every option table in the shipped README gives each option a default', () => {
  let tables = 0;
  const lines = readme.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const header = lines[i].startsWith('|') ? lines[i].split('|').map((c) => c.trim()) : null;
    if (!header || header[1] !== 'option' || !header.includes('default')) continue;
    tables++;
    const col = header.indexOf('default');
    for (let j = i + 2; j < lines.length && lines[j].startsWith('|'); j++) {
      const cells = lines[j].split(/(?<!\\)\|/).map((c) => c.trim());
      assert.ok(cells[col], `a default for ${cells[1]} (README line ${j + 1})`);
    }
  }
  assert.ok(tables >= 2, `the README has option tables with a default column (found ${tables})`);
});

test('every link in the shipped README resolves: an anchor of its own or a file of the tarball', () => {
  const [pack] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--silent', pkg], { encoding: 'utf8' }));
  const files = new Set(pack.files.map((f) => f.path));
  assert.ok(files.has('README.md') && files.has('index.js'), 'npm pack lists the tarball');
  const bad = [];
  const targets = [
    ...[...plainProse.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]),
    ...[...plainProse.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]),
    ...[...plainProse.matchAll(/<(?:a|img)\s[^>]*(?:href|src)="([^"]+)"/g)].map((m) => m[1]),
  ];
  for (const target of targets) {
    if (/^https?:/i.test(target)) continue; // the URL test below
    if (target.startsWith('#')) {
      if (!anchors.has(decodeURIComponent(target.slice(1)))) bad.push(`${target} (no such heading)`);
      continue;
    }
    if (/^[a-z][\w+.-]*:/i.test(target)) {
      bad.push(`${target} (a ${target.split(':')[0]}: link)`);
      continue;
    }
    const [path, hash] = target.replace(/^\.\//, '').split('#');
    if (!files.has(decodeURIComponent(path))) bad.push(`${target} (not in the tarball)`);
    else if (hash && path === 'README.md' && !anchors.has(hash)) bad.push(`${target} (no such heading)`);
  }
  assert.deepEqual(bad, [], 'links of pkg/README.md that lead nowhere');
});

test('the shipped README and package.json name no URL but real, allowed ones', () => {
  const url = /\bhttps?:\/\/[^\s)<>"'`\]]+?(?=[.,;:!?]*(?:[\s)<>"'`\]]|$))/gi;
  const bad = [];
  for (const [u] of plainProse.matchAll(url)) if (!ALLOWED_URLS.has(u)) bad.push(`${u} (README prose)`);
  const inCode = [...codeBlocks.matchAll(url), ...codeSpans.join('\n').matchAll(url)].map((m) => m[0]);
  for (const u of inCode) {
    if (ALLOWED_URLS.has(u)) continue;
    let host;
    try {
      host = new URL(u.replace(/\$\{[^}]*\}/g, 'x')).hostname;
    } catch {
      host = '';
    }
    if (!EXAMPLE_HOSTS.test(host)) bad.push(`${u} (README code: only example.com or loopback hosts)`);
  }
  const manifest = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8'));
  for (const [u] of JSON.stringify(manifest).matchAll(url)) if (!ALLOWED_URLS.has(u)) bad.push(`${u} (package.json)`);
  assert.deepEqual(bad, [], 'URLs that are not on the allow-list of pages known to exist');
});

test('every README section the package code cites is a heading of the shipped README', () => {
  const cited = new Map();
  for (const f of readdirSync(pkg).filter((n) => /\.(c?js|d\.c?ts)$/.test(n))) {
    for (const m of readFileSync(join(pkg, f), 'utf8').matchAll(/README(?:\.md)?,\s*["“]([^"”]+)["”]/g)) {
      cited.set(m[1], [...(cited.get(m[1]) ?? []), f]);
    }
  }
  assert.ok(cited.size > 0, 'the code cites README sections (the pattern still matches)');
  const missing = [...cited].filter(([s]) => !headings.includes(s)).map(([s, fs]) => `"${s}" (cited in ${[...new Set(fs)].join(', ')})`);
  assert.deepEqual(missing, [], `README sections cited by the code that pkg/README.md lacks; its headings: ${headings.join(' | ')}`);
});

// ---- Laid out for looking things up (issue 40, item 5) --------------------------

/** The longest a table cell may run, in words: a table is for scanning, an entry for reading. */
const MAX_CELL_WORDS = 30;

/** Headings with their level, text (code marks removed) and offset in the page. */
const outline = [...prose.matchAll(/^(#{1,6})\s+(.+?)\s*#*\s*$/gm)].map((m) => ({
  level: m[1].length,
  text: m[2].replace(/`/g, '').trim(),
  at: m.index,
}));
const h2 = (text) => outline.find((h) => h.level === 2 && h.text === text);

/** The option names of index.d.ts a reader may look up: the client's, its policies' (`retry.x`), FetchInit's and a call's. */
function optionNames() {
  const names = new Set();
  for (const type of ['ClientOptions', 'FetchInit', 'CallOptions', 'RequestOptions', 'SchemaOptions']) {
    for (const n of declared(type) ?? []) names.add(n);
  }
  for (const [type, prefix] of [['RetryOptions', 'retry'], ['BudgetOptions', 'budget'], ['BreakerOptions', 'breaker'],
    ['ConcurrencyOptions', 'concurrency'], ['StorageOptions', 'storage']]) {
    for (const n of declared(type) ?? []) names.add(`${prefix}.${n}`);
  }
  return [...names];
}

test('the shipped README starts with install and a first example of at most 10 lines', () => {
  const first = outline.find((h) => h.level === 2);
  assert.equal(first?.text, 'Install', 'the first section is "Install"');
  const section = prose.slice(first.at, outline.find((h) => h.level === 2 && h.at > first.at).at);
  assert.match(readme.slice(first.at), /^```sh\nnpm install stormguard\n```/m, 'it says `npm install stormguard`');
  const example = /```js\n([\s\S]*?)```/.exec(readme.slice(first.at, first.at + section.length));
  assert.ok(example, 'Install has a js example');
  const lines = example[1].trimEnd().split('\n');
  assert.ok(lines.length <= 10, `the first example is ${lines.length} lines (at most 10)`);
  assert.match(example[1], /createClient\(/);
  assert.match(example[1], /\.request\(/);
});

test('the shipped README runs: install, usage, recipes, reference, then the long explanations', () => {
  const order = ['Install', 'Usage', 'Recipes', 'Client methods', 'Options', 'Errors', 'Stats and events',
    'fetch() as a drop-in', 'Why: retry storms', 'Server clients', 'Beyond retries: tabs, offline, adaptive throttling',
    'Threat model'];
  const at = order.map((text) => {
    const h = h2(text);
    assert.ok(h, `the README has a "## ${text}" section`);
    return h.at;
  });
  assert.deepEqual(at, [...at].sort((a, b) => a - b), `the sections run in this order: ${order.join(' · ')}`);
});

test('every option of index.d.ts has its own entry in the shipped README, opening with its default', () => {
  const names = optionNames();
  assert.ok(names.length >= 60, `index.d.ts declares the options (found ${names.length})`);
  const start = h2('Options').at;
  const end = h2('Errors').at;
  const missing = [];
  const noDefault = [];
  for (const name of names) {
    const h = outline.find((o) => o.level >= 3 && o.text === name && o.at > start && o.at < end);
    if (!h) {
      missing.push(name);
      continue;
    }
    const body = prose.slice(h.at).split('\n').slice(1).find((l) => l.trim());
    if (!/^Default: /.test(body ?? '')) noDefault.push(`${name}: ${body}`);
  }
  assert.deepEqual(missing, [], 'options with no heading of their own under "Options"');
  assert.deepEqual(noDefault, [], 'option entries whose first line is not "Default: ..."');
});

test('every error class and every event has its own heading in the shipped README', () => {
  const missing = [];
  const errors = [h2('Errors').at, h2('Stats and events').at];
  for (const [, name] of types.matchAll(/export declare class (\w+) extends/g)) {
    if (!outline.some((o) => o.text === name && o.at > errors[0] && o.at < errors[1])) missing.push(name);
  }
  const events = /export type EventName =([^;]*);/.exec(types);
  for (const [, e] of events[1].matchAll(/'(\w+)'/g)) {
    if (!outline.some((o) => o.text === `${e} event` && o.at > errors[1])) missing.push(`${e} event`);
  }
  assert.deepEqual(missing, [], 'error classes (under "Errors") and events (under "Stats and events") without a heading');
});

test(`no table cell of the shipped README runs over ${MAX_CELL_WORDS} words`, () => {
  const long = [];
  for (const line of prose.split('\n')) {
    if (!line.startsWith('|')) continue;
    for (const cell of line.slice(1, -1).split(/(?<!\\)\|/)) {
      const words = cell.split(/\s+/).filter(Boolean).length;
      if (words > MAX_CELL_WORDS) long.push(`${words} words: ${cell.trim().slice(0, 60)}…`);
    }
  }
  assert.deepEqual(long, [], 'cells to move into an entry of their own');
});

test('neither the shipped README nor README.md names API.md, a file outside the repository', () => {
  for (const [name, text] of [['pkg/README.md', readme], ['README.md', readFileSync(join(root, 'README.md'), 'utf8')]]) {
    const lines = text.split('\n').map((l, i) => [i + 1, l]).filter(([, l]) => /\bAPI\.md\b/.test(l));
    assert.deepEqual(lines, [], `${name} lines naming API.md`);
  }
});
