// The shape of src/, checked in `npm test` (issue 17): no module imports
// another that imports it back (directly or round a longer loop), and the
// web layer stays thin: no `impl` block over 300 lines, no type whose `impl`
// blocks together (wherever they are) pass 450, no function over 80, no
// struct with more than 6 public fields. Prints the largest of each. A
// type's inherent methods are defined in its own module or a child of it,
// never in a sibling file: issue 38 found `impl Engine` spread over six
// files, each block under the limit while the type had 947 lines, and a
// call cycle (driver.rs -> probe.rs -> driver) that the import check
// cannot see.
//
// Rust is read with a brace matcher over the source with comments and
// string literals blanked out: enough for rustfmt-formatted code, which
// `cargo fmt --check` guarantees before this runs.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(fileURLToPath(new URL('..', import.meta.url)), 'src');
// `type`: one type's impl blocks summed. 450, not the block's 300: a type
// may spread over its module and its children (engine.rs and engine/news.rs
// are one type's), and issue 38 set 450 lines as the engine's bound.
const LIMITS = { impl: 300, type: 450, fn: 80, pubFields: 6 };
const WEB = 'web';

function files(dir) {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.rs') ? [p] : [];
  });
}

/** Comments and the insides of string and char literals blanked, lines kept. */
function blank(src) {
  return src
    .replace(/\/\*[\s\S]*?\*\//g, (m) => m.replace(/[^\n]/g, ' '))
    .replace(/"(?:\\.|[^"\\])*"/g, (m) => `"${' '.repeat(m.length - 2)}"`)
    .replace(/'(?:\\.|[^'\\\n])'/g, "' '")
    .replace(/\/\/.*$/gm, '');
}

/** `src/web/engine/news.rs` -> `web::engine::news`; mod.rs and lib.rs name their folder. */
function moduleOf(path) {
  const parts = relative(root, path).replace(/\.rs$/, '').split('/');
  if (['mod', 'lib'].includes(parts.at(-1))) parts.pop();
  return parts.join('::');
}

const modules = new Map(files(root).map((p) => [moduleOf(p), p]));

/** The module a `crate::`/`super::`/`self::` path names (its longest module prefix). */
function resolve(from, path) {
  const isDir = /(^|\/)(mod|lib)\.rs$/.test(modules.get(from));
  let base = from ? from.split('::') : [];
  if (!isDir) base = base.slice(0, -1); // a file's `super` is its folder's parent...
  let parts = path.split('::');
  if (parts[0] === 'crate') { base = []; parts = parts.slice(1); }
  else if (parts[0] === 'self') { base = from ? from.split('::') : []; parts = parts.slice(1); }
  else if (parts[0] === 'super') {
    base = isDir ? base.slice(0, -1) : base; // ...and a folder module's is one up
    parts = parts.slice(1);
    while (parts[0] === 'super') { base = base.slice(0, -1); parts = parts.slice(1); }
  } else return null;
  for (let n = parts.length; n > 0; n--) {
    const m = [...base, ...parts.slice(0, n)].join('::');
    if (modules.has(m)) return m;
  }
  return null;
}

// ---- import cycles: strongly connected components of the use graph
const edges = new Map();
for (const [m, p] of modules) {
  const src = blank(readFileSync(p, 'utf8'));
  const out = new Set();
  for (const use of src.matchAll(/\b(?:crate|super|self)(?:::\w+)+/g)) {
    const t = resolve(m, use[0]);
    // a child reading its parent (or a parent its child) is one unit in Rust
    if (t && t !== m && !t.startsWith(`${m}::`) && !m.startsWith(`${t}::`)) out.add(t);
  }
  edges.set(m, out);
}
const cycles = [];
{
  let next = 0;
  const index = new Map(), low = new Map(), stack = [], on = new Set();
  const visit = (v) => {
    index.set(v, next); low.set(v, next); next++; stack.push(v); on.add(v);
    for (const w of edges.get(v)) {
      if (!index.has(w)) { visit(w); low.set(v, Math.min(low.get(v), low.get(w))); }
      else if (on.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) === index.get(v)) {
      const c = [];
      let w;
      do { w = stack.pop(); on.delete(w); c.push(w); } while (w !== v);
      if (c.length > 1) cycles.push(c.sort());
    }
  };
  for (const v of modules.keys()) if (!index.has(v)) visit(v);
}

// ---- sizes in src/web: impl blocks, types, functions, public fields
const items = { impl: [], type: [], fn: [], pubFields: [] };
const inWeb = (m) => m === WEB || m.startsWith(`${WEB}::`);
const within = (m, outer) => m === outer || m.startsWith(`${outer}::`);
/** Where each type of src/web is defined: name -> modules. */
const defined = new Map();
for (const [m, p] of modules) {
  if (!inWeb(m)) continue;
  for (const d of blank(readFileSync(p, 'utf8')).matchAll(/^\s*(?:pub(?:\([^)]*\))?\s+)?(?:struct|enum|trait|type)\s+(\w+)/gm)) {
    defined.set(d[1], [...(defined.get(d[1]) ?? []), m]);
  }
}
/** The module that defines the type an impl in `m` names: its own or an
 * ancestor's definition first, else the only one; null when not in src/web. */
function definer(m, name) {
  const ds = defined.get(name) ?? [];
  const up = ds.filter((d) => within(m, d)).sort((a, b) => b.length - a.length);
  return up[0] ?? (ds.length === 1 ? ds[0] : null);
}
/** `impl<'a> Drive<'a>` -> { name: 'Drive', inherent: true }; `impl X for Y<T>` -> Y, not inherent. */
function implOf(head) {
  let t = head.replace(/^\s*impl\s*/, '');
  if (t.startsWith('<')) {
    let depth = 0, i = 0;
    for (; i < t.length; i++) {
      if (t[i] === '<') depth++;
      else if (t[i] === '>' && --depth === 0) break;
    }
    t = t.slice(i + 1);
  }
  const parts = t.split(/\s+for\s+/);
  const name = parts.at(-1).trim().match(/^(?:\w+::)*(\w+)/)?.[1];
  return { name, inherent: parts.length === 1 };
}
const types = new Map();
const strays = [];
for (const [m, p] of modules) {
  if (!inWeb(m)) continue;
  const lines = blank(readFileSync(p, 'utf8')).split('\n');
  const where = (i) => `${relative(join(root, '..'), p)}:${i + 1}`;
  lines.forEach((line, i) => {
    const head = line.match(/^\s*(impl\b|(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w+)|(?:pub(?:\([^)]*\))?\s+)?struct\s+(\w+))/);
    if (!head) return;
    let depth = 0, opened = false, end = -1;
    for (let j = i; j < lines.length && end < 0; j++) {
      if (!opened && j > i && /;\s*$/.test(lines[j - 1])) break; // a declaration without a body
      for (const ch of lines[j]) {
        if (ch === '{') { depth++; opened = true; }
        else if (ch === '}') { depth--; if (opened && depth === 0) { end = j; break; } }
      }
      if (!opened && /;\s*$/.test(lines[j])) break;
    }
    if (end < 0) return;
    const name = line.trim().replace(/\s*\{$/, '').slice(0, 90);
    if (head[1].startsWith('impl')) {
      items.impl.push({ size: end - i + 1, name, at: where(i) });
      const of = implOf(lines.slice(i, end + 1).join(' ').split('{')[0]);
      const home = of.name && definer(m, of.name);
      if (!home) return;
      const key = `${home}::${of.name}`;
      const t = types.get(key) ?? { size: 0, name: of.name, at: [] };
      t.size += end - i + 1;
      t.at.push(where(i));
      types.set(key, t);
      if (of.inherent && !within(m, home)) strays.push({ name: of.name, home, at: where(i) });
    }
    else if (head[2]) items.fn.push({ size: end - i + 1, name, at: where(i) });
    else {
      const fields = lines.slice(i + 1, end).filter((l) => /^\s*pub(?:\([^)]*\))?\s+\w+\s*:/.test(l)).length;
      items.pubFields.push({ size: fields, name, at: where(i) });
    }
  });
}

for (const t of types.values()) items.type.push({ size: t.size, name: `${t.name}'s impl blocks`, at: t.at.join(', ') });

let failed = false;
console.log(`structure: ${modules.size} modules, ${[...edges.values()].reduce((a, e) => a + e.size, 0)} imports between them`);
if (cycles.length === 0) console.log('  import cycles: none');
for (const c of cycles) {
  failed = true;
  console.log(`  IMPORT CYCLE: ${c.join(' <-> ')}`);
  for (const a of c) for (const b of edges.get(a)) if (c.includes(b)) console.log(`    ${a} -> ${b}`);
}
if (strays.length === 0) console.log('  inherent methods outside their type\'s module: none');
for (const x of strays) {
  failed = true;
  console.log(`  INHERENT METHODS OUTSIDE THEIR TYPE'S MODULE: impl ${x.name} (defined in ${x.home}) at ${x.at}: move them to ${x.home} or a child of it`);
}
const label = { impl: 'lines in one impl', type: 'lines in one type', fn: 'lines in one function', pubFields: 'public fields in one struct' };
for (const kind of Object.keys(LIMITS)) {
  const sorted = items[kind].sort((a, b) => b.size - a.size);
  const over = sorted.filter((x) => x.size > LIMITS[kind]);
  const top = sorted[0];
  console.log(`  src/web, most ${label[kind]}: ${top.size} (${top.name}, ${top.at}); limit ${LIMITS[kind]}`);
  for (const x of over) {
    failed = true;
    console.log(`  OVER THE LIMIT: ${x.size} ${label[kind]} > ${LIMITS[kind]}: ${x.name} (${x.at})`);
  }
}
if (failed) {
  console.log('structure: failed (issues 17 and 38 set these limits: split the piece by what it does, or say in the issue why it must be larger)');
  process.exit(1);
}
