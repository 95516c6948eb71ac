// The shape of src/, checked in `npm test` (issue 17): no module imports
// another that imports it back (directly or round a longer loop), and the
// web layer stays thin: no `impl` block over 300 lines, no function over 80,
// no struct with more than 6 public fields. Prints the largest of each.
//
// Rust is read with a brace matcher over the source with comments and
// string literals blanked out: enough for rustfmt-formatted code, which
// `cargo fmt --check` guarantees before this runs.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(fileURLToPath(new URL('..', import.meta.url)), 'src');
const LIMITS = { impl: 300, fn: 80, pubFields: 6 };
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

// ---- sizes in src/web: impl blocks, functions, public fields
const items = { impl: [], fn: [], pubFields: [] };
for (const [m, p] of modules) {
  if (m !== WEB && !m.startsWith(`${WEB}::`)) continue;
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
    if (head[1].startsWith('impl')) items.impl.push({ size: end - i + 1, name, at: where(i) });
    else if (head[2]) items.fn.push({ size: end - i + 1, name, at: where(i) });
    else {
      const fields = lines.slice(i + 1, end).filter((l) => /^\s*pub(?:\([^)]*\))?\s+\w+\s*:/.test(l)).length;
      items.pubFields.push({ size: fields, name, at: where(i) });
    }
  });
}

let failed = false;
console.log(`structure: ${modules.size} modules, ${[...edges.values()].reduce((a, e) => a + e.size, 0)} imports between them`);
if (cycles.length === 0) console.log('  import cycles: none');
for (const c of cycles) {
  failed = true;
  console.log(`  IMPORT CYCLE: ${c.join(' <-> ')}`);
  for (const a of c) for (const b of edges.get(a)) if (c.includes(b)) console.log(`    ${a} -> ${b}`);
}
const label = { impl: 'lines in one impl', fn: 'lines in one function', pubFields: 'public fields in one struct' };
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
  console.log('structure: failed (issue 17 set these limits: split the piece, or say in the issue why it must be larger)');
  process.exit(1);
}
