// The seam between the wasm and its JS (ARCHITECTURE.md, "The seam"): each
// protocol is defined once on the Rust side, and the JS names what it
// defines. This reads both sides' sources and fails when one names
// something the other does not: a string enum's name a JS function returns
// that the enum lacks (wasm-bindgen would hand Rust its invalid variant), an
// UserFnFlag bit core.js sets that hooks.rs does not export, an event or error
// name one side lists and the other not, a name the engine hands out
// (retryDenied, phase, breaker state) that index.d.ts does not type. No
// build, no server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './browser.mjs';

const read = (rel) => readFileSync(join(root, rel), 'utf8');
const core = read('pkg-template/core.js');

/** The `#[wasm_bindgen]` enum `name` of `rel`: [variant, value] (a string or a number) in order. */
function rustEnum(rel, name) {
  const m = new RegExp(`#\\[wasm_bindgen\\][^{]*?enum ${name} \\{([\\s\\S]*?)\\n\\}`).exec(read(rel));
  assert.ok(m, `${rel} has a #[wasm_bindgen] enum ${name}`);
  return [...m[1].matchAll(/^\s*(\w+) = (?:"([^"]*)"|(\d+)),/gm)].map(([, v, s, n]) => [v, s ?? Number(n)]);
}

/** The source of JS function `name` in `text`, to its closing brace at the start of a line. */
function jsFunction(text, name) {
  const start = text.search(new RegExp(`\\bfunction ${name}\\(`));
  assert.ok(start >= 0, `function ${name} found`);
  return text.slice(start, text.indexOf('\n}\n', start) + 2);
}

/** The string literals in `code` that are not compared with (`=== 'x'`). */
const literals = (code) =>
  [...code.matchAll(/(=== |!== )?'([^']*)'/g)].filter((m) => !m[1]).map((m) => m[2]);

/**
 * What a function's `return` statements give: their string literals, and those assigned to a
 * variable a `return` gives (`let step = 'a'; ... return step;`).
 */
function returned(body) {
  const out = new Set();
  for (const [, expr] of body.matchAll(/\breturn ([^;\n]*)/g)) {
    for (const l of literals(expr)) out.add(l);
    const v = /^(\w+)$/.exec(expr.trim());
    if (v) for (const [, value] of body.matchAll(new RegExp(`\\b${v[1]} = ([^;\\n]*)`, 'g'))) for (const l of literals(value)) out.add(l);
  }
  return out;
}

for (const [rel, name, js, fn] of [
  ['src/web/request.rs', 'Query', 'src/web/request.js', 'setQuery'],
  ['src/web/request.rs', 'Body', 'src/web/request.js', 'encodeBody'],
  ['src/web/host.rs', 'Sent', 'src/web/host.js', 'wasSent'],
  // Its twin for a closed client, whose wasm is gone.
  ['src/web/host.rs', 'Sent', 'pkg-template/core.js', 'passes'],
]) {
  test(`${js}'s ${fn} answers in the names of ${rel}'s ${name}, each of them`, () => {
    const names = rustEnum(rel, name).map(([, s]) => s);
    const said = returned(jsFunction(read(js), fn));
    assert.deepEqual([...said].filter((s) => !names.includes(s)), [], `names ${fn} returns that ${name} lacks`);
    assert.deepEqual(names.filter((s) => !said.has(s)), [], `names of ${name} that ${fn} never returns`);
  });
}

test("host.js's isA knows a brand for every class of host.rs's Class", () => {
  const names = rustEnum('src/web/host.rs', 'Class').map(([, s]) => s);
  const brands = /const BRANDS = \{([^}]*)\}/.exec(read('src/web/host.js'));
  assert.ok(brands, 'host.js has BRANDS');
  const keys = [...brands[1].matchAll(/(\w+):/g)].map((m) => m[1]);
  assert.deepEqual(keys.sort(), [...names].sort());
});

test("core.js sets only the UserFnFlag bits hooks.rs exports, each a bit of its own, and each entry hands it over", () => {
  const flags = rustEnum('src/web/hooks.rs', 'UserFnFlag');
  const bits = flags.map(([, n]) => n);
  assert.ok(bits.every((n) => Number.isInteger(n) && n > 0 && (n & (n - 1)) === 0), 'powers of two');
  assert.equal(new Set(bits).size, bits.length, 'no bit twice');
  const used = new Set([...core.matchAll(/UserFnFlag\.(\w+)/g)].map((m) => m[1]));
  const names = flags.map(([v]) => v);
  assert.deepEqual([...used].filter((u) => !names.includes(u)), [], 'UserFnFlag members core.js uses that hooks.rs lacks');
  assert.doesNotMatch(core, /\bflags\s*&\s*~?\d/, 'a flag bit written as a number in core.js');
  for (const entry of ['index.js', 'node.js', 'workerd.js']) {
    assert.match(read(`pkg-template/${entry}`), /const glue = \{[^}]*\bUserFnFlag\b/, `${entry} hands UserFnFlag to core.js`);
  }
});

test("every method hooks.rs calls on the UserFns is one of core.js's class UserFns", () => {
  const block = /extern "C" \{([\s\S]*?)\n\}/.exec(read('src/web/hooks.rs'))[1];
  const called = [...block.matchAll(/#\[wasm_bindgen\(method(?:, getter)?(?:, catch)?(?:, js_name = (\w+))?\)\]\s*(?:#\[[^\]]*\]\s*)*pub fn (\w+)/g)]
    .map(([, js, rust]) => js ?? rust);
  assert.ok(called.length >= 5, `hooks.rs declares the UserFns's methods (${called})`);
  const fns = core.slice(core.indexOf('class UserFns {'), core.indexOf('\n}\n', core.indexOf('class UserFns {')));
  for (const m of called) assert.match(fns, new RegExp(`\\n  (?:async |get )?${m}\\(|this\\.${m} = `), `core.js's UserFns has ${m}`);
});

/** Every Rust file under src/web, as one text. */
const web = () =>
  readdirSync(join(root, 'src/web'), { recursive: true }).filter((f) => f.endsWith('.rs')).map((f) => read(`src/web/${f}`)).join('\n');

test('the event names are the same in the engine, core.js and index.d.ts', () => {
  const rust = /const EVENTS: \[&str; \d+\] = \[([^\]]*)\]/.exec(web());
  assert.ok(rust, 'src/web has EVENTS');
  const js = /const EVENTS = \[([^\]]*)\]/.exec(core);
  const ts = /export type EventName = ([^;]*);/.exec(read('pkg-template/index.d.ts'));
  const names = (text) => [...text.matchAll(/["']([^"']+)["']/g)].map((m) => m[1]);
  assert.deepEqual(names(js[1]), names(rust[1]), 'core.js EVENTS');
  assert.deepEqual(names(ts[1]), names(rust[1]), 'index.d.ts EventName');
});

test("every error name errors.rs hands out is a class of core.js's CLASSES", () => {
  const fn = /pub fn name\(&self\) -> &'static str \{([\s\S]*?)\n    \}/.exec(read('src/web/errors.rs'));
  assert.ok(fn, 'errors.rs has CallError::name');
  const rust = new Set([...fn[1].matchAll(/"(\w+Error)"/g)].map((m) => m[1]));
  const classes = /const CLASSES = \{([^}]*)\}/.exec(core)[1].split(',').map((s) => s.trim()).filter(Boolean);
  const defined = [...core.matchAll(/export const (\w+) = define\('(\w+)'/g)];
  assert.deepEqual(defined.filter(([, v, n]) => v !== n), [], 'a class whose variable and name differ');
  assert.deepEqual([...rust].filter((n) => !classes.includes(n)), [], 'names errors.rs gives that CLASSES lacks');
});

/** The names `impl <type>`'s `as_str` gives, in `rel`. */
function asStr(rel, type) {
  const text = read(rel);
  const at = text.indexOf(`impl ${type} {`);
  assert.ok(at >= 0, `${rel} has impl ${type}`);
  const body = /pub fn as_str\(self\) -> &'static str \{([\s\S]*?)\n    \}/.exec(text.slice(at));
  assert.ok(body, `${type}::as_str in ${rel}`);
  return [...body[1].matchAll(/=> "([^"]+)"/g)].map((m) => m[1]);
}

/** The string literals of a TypeScript union. */
const union = (text) => [...text.matchAll(/'([^']+)'/g)].map((m) => m[1]);

test("the names the engine hands out are index.d.ts's: retryDenied, a timeout's phase, a breaker's state", () => {
  const dts = read('pkg-template/index.d.ts');
  const denied = /export type RetryDenied = ([^;]*);/.exec(dts);
  assert.deepEqual(union(denied[1]).sort(), asStr('src/policy/classify.rs', 'RetryDenied').sort(), 'RetryDenied');
  const phase = /readonly phase: ([^;]*);/.exec(dts);
  assert.deepEqual(union(phase[1]).sort(), asStr('src/policy/guard.rs', 'Phase').sort(), "TimeoutError's phase");
  const state = /\bstate: ('closed'[^;]*);/.exec(dts);
  assert.ok(state, "index.d.ts has a breaker's state");
  assert.deepEqual(union(state[1]).sort(), asStr('src/policy/breaker.rs', 'State').sort(), "a breaker's state");
});
