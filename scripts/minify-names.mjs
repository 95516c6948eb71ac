// The names the wasm and its glue share, made short (npm run build).
//
// wasm-bindgen names every import after the JS it calls plus a hash
// (`__wbg_then_9e7e2ba07356c4b5`, 153 of them, from a module named
// "./stormguard_bg.js") and exports its closure shims after their Rust types
// (up to 272 characters). Each name is in the .wasm and again in the glue, and
// the hashes do not compress. Binaryen's `--minify-imports-and-exports-and-modules`
// renames them all in the .wasm (`a`, `b`, ... from module `a`); the glue's
// import object and its `wasm.<export>` uses are rewritten here to match, from
// the map that pass prints. Measured (issue 28): wasm 90,775 -> 87,563 bytes gzip.
//
// Every name the map gives must be found in the glue exactly where expected,
// or the build stops: a wasm-bindgen whose glue is written otherwise must not
// ship a module whose imports its glue no longer provides.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { WASM_FEATURES } from './wasm-opt.mjs';

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `text` with the one occurrence of `re` replaced, or an error naming `what`. */
function replaceOnce(text, re, to, what) {
  const found = text.match(new RegExp(re.source, 'g'))?.length ?? 0;
  if (found !== 1) throw new Error(`minify-names: ${what} occurs ${found} times in the glue (1 expected)`);
  return text.replace(re, to);
}

/**
 * Minifies the import, export and module names of `wasmPath` in place with
 * `wasmOpt`, and returns `glue` (wasm-bindgen's JS for it, as it wrote it)
 * rewritten to use the new names. `keepNames`: the name section stays (the
 * twiggy build of bench/size.mjs).
 */
export function minifyNames(wasmOpt, wasmPath, glue, { keepNames = false } = {}) {
  const args = [...WASM_FEATURES, ...(keepNames ? ['-g'] : []), '--minify-imports-and-exports-and-modules'];
  const printed = execFileSync(wasmOpt, [...args, wasmPath, '-o', wasmPath]).toString();
  const map = JSON.parse(printed.slice(printed.indexOf('{'), printed.lastIndexOf('}') + 1));
  const module = new WebAssembly.Module(readFileSync(wasmPath));

  // The new module of each import, by its new name (one counter names them all).
  const newModule = new Map();
  for (const { module: m, name } of WebAssembly.Module.imports(module)) {
    if (newModule.has(name)) throw new Error(`minify-names: two imports are named ${name}`);
    newModule.set(name, m);
  }
  if (newModule.size !== map.imports.length) {
    throw new Error(`minify-names: the map names ${map.imports.length} imports, the module has ${newModule.size}`);
  }

  // Each of the glue's import modules: `"<module>": <object>,` in the object
  // __wbg_get_imports returns; the glue's own functions (`import0`, an object
  // literal in it) are renamed where they are written, an imported snippet's
  // (`import1`, a module namespace) are picked from it by their old names.
  const byModule = new Map();
  for (const [oldModule, oldName, newName] of map.imports) {
    if (!byModule.has(oldModule)) byModule.set(oldModule, []);
    byModule.get(oldModule).push([oldName, newName]);
  }
  // Several old modules may get one new name (Binaryen names them all `a`):
  // the new module's object is the glue's literal, renamed, with what it
  // picks from the namespaces added to it.
  let out = glue;
  const entries = new Map(); // new module -> { literal, picked[] }
  for (const [oldModule, names] of byModule) {
    const entry = new RegExp(`\\s*${escape(JSON.stringify(oldModule))}: (import\\d+),`);
    const object = out.match(entry)?.[1];
    if (!object) throw new Error(`minify-names: the glue gives no object for the import module ${oldModule}`);
    const to = newModule.get(names[0][1]);
    if (names.some(([, n]) => newModule.get(n) !== to)) {
      throw new Error(`minify-names: the imports of ${oldModule} were given different module names`);
    }
    // wasm-bindgen 0.2.130 writes a snippet with several functions imported
    // without a shim once per function (`import * as import1`, `import2` ...
    // of one file): one namespace, so the first one serves for all.
    out = out.replace(new RegExp(entry.source, 'g'), '');
    if (!entries.has(to)) entries.set(to, { literal: null, picked: [] });
    const e = entries.get(to);
    if (new RegExp(`const ${object} = \\{`).test(out)) {
      if (e.literal) throw new Error(`minify-names: two object literals for the import module ${to}`);
      e.literal = object;
      for (const [oldName, newName] of names) {
        out = replaceOnce(out, new RegExp(`\\b${escape(oldName)}(?=: function\\b)`), newName, `import ${oldName}`);
      }
    } else {
      e.picked.push(...names.map(([o, n]) => `${JSON.stringify(n)}: ${object}[${JSON.stringify(o)}]`));
    }
  }
  const objects = [...entries].map(([to, { literal, picked }]) => {
    const pick = `{ ${picked.join(', ')} }`;
    const value = literal && picked.length ? `Object.assign(${literal}, ${pick})` : literal ?? pick;
    return `\n        ${JSON.stringify(to)}: ${value},`;
  });
  out = replaceOnce(out, /return \{\n\s*__proto__: null,/, (m) => m + objects.join(''), 'the object __wbg_get_imports returns');

  // The exports the glue reads: `wasm.<name>` (the instance's exports object).
  for (const [oldName, newName] of map.exports) {
    out = out.replace(new RegExp(`\\bwasm\\.${escape(oldName)}\\b`, 'g'), `wasm.${newName}`);
  }
  const renamed = new Set(map.exports.map(([, to]) => to));
  const left = [...out.matchAll(/\bwasm\.([A-Za-z_$][\w$]*)/g)].map((m) => m[1]).filter((n) => !renamed.has(n));
  if (left.length) throw new Error(`minify-names: the glue still reads wasm.${left[0]}, which the map does not rename`);
  return out;
}
