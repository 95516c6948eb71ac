// The part of RESULTS.md that explains stormguard's misses: which default
// holds a figure back, by how much (the variants run beside the defaults in
// the same storm batches), and the change proposed. Numbers come from the run.
import { fixed, kb, mdTable, pct } from './lib.mjs';
import { normalizeStorm, recoveryText, stormRow, stormVerdicts } from './report.mjs';
import { SIZE_TARGET_GZIP } from './size.mjs';
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
    md += `With the default options stormguard meets all ${total} storm targets of issue 15.\n\n`;
  } else {
    md += `With the default options stormguard misses ${missed.length} of the ${total} storm targets of issue 15. ` +
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

/** `; at <L> s, <one default changed> <amplification>, ...` for each page-load variant measured in the outage of length L. */
function pageLoadVariants(S, L) {
  const tried = Object.keys(VARIANT_OF)
    .map((n) => [n, stormRow(S, 'outage', n, L, 'page-load')])
    .filter(([, r]) => r)
    .map(([n, r]) => `\`${VARIANT_OF[n][0]}: ${VARIANT_OF[n][2]}\` ${fixed(r.amplification)}`);
  return tried.length ? `; at ${L / 1000} s, ${tried.join(', ')}` : '';
}

/** What the run's figures say about each default (text with this run's numbers; a note only where its rows ran). */
function stormNotes(S) {
  const get = (sc, st, L = 10000, p = 'steady') => stormRow(S, sc, st, L, p);
  const amp = (r) => fixed(r.amplification);
  const br = (r) => r?.breaker ?? {};
  const notes = [];

  // 1. a page load's first burst in a fault goes out whole
  const pl = [3000, 10000].map((L) => [L, get('outage', 'stormguard', L, 'page-load'), get('outage', 'cockatiel', L, 'page-load'), get('outage', 'none', L, 'page-load')])
    .filter(([, sg, ck, no]) => sg && ck && no);
  if (pl.length) {
    notes.push(`**A page load's amplification has a floor of about 1 in faults shorter than its period.** A page-load client calls ` +
      `every 10 s, so in a 3 s or 10 s outage it makes at most one burst, and it makes it with its breakers closed (nothing failed ` +
      `before): its 6 parallel calls all go out before the first 503 comes back. No client-side setting can send fewer than one ` +
      `attempt per call there; what is left to choose is how many retries follow. Measured: ` +
      pl.map(([L, sg, ck, no]) => `${L / 1000} s: stormguard ${amp(sg)}, cockatiel ${amp(ck)}, none ${amp(no)}`).join('; ') +
      `. stormguard's excess over 1 is the retry budget's floor (\`minRetries\` 3: three of the burst's six failures are retried ` +
      `once; its breakers then open after the third failure per endpoint)` +
      pageLoadVariants(S, 10000) + '.' +
      ` The target (<= 0.55) can only be met here by refusing calls that no failure has yet justified, which is not a breaker's job.`);
  }

  // 2. a short steady outage: the breaker needs 3 failures before it opens
  const s3 = get('outage', 'stormguard', 3000);
  const c1 = get('outage', 'stormguard-consecutive1', 3000);
  if (s3 && c1) {
    const b1 = get('brownout', 'stormguard-consecutive1', 3000);
    const b3 = get('brownout', 'stormguard', 3000);
    const bn = get('brownout', 'none', 3000);
    notes.push(`**A 3 s outage is over before three failures in a row.** A steady client makes three calls in it; with ` +
      `\`consecutiveFailures: 3\` its breaker opens only after its third failure (the first call, its retry, the next call), so ` +
      `most of the fault's attempts are sent: amplification ${amp(s3)} (cockatiel ${amp(get('outage', 'cockatiel', 3000) ?? s3)}). ` +
      `Opening on the first failure (\`consecutiveFailures: 1\`) measured ${amp(c1)}, peak ${fixed(c1.peakRatio)}x, recovery ${rec(c1)}, ` +
      `success ${pct(c1.successFromFault)}` +
      (b1 && b3 && bn ? `; its cost shows in the 3 s brownout, where one slow answer opens the breaker for 2 s: success ` +
        `${pct(b1.successFromFault)} against the defaults' ${pct(b3.successFromFault)} and none's ${pct(bn.successFromFault)}, recovery ${rec(b1)} (defaults ${rec(b3)})` : '') +
      `.`);
  }

  // 3. page loads after an outage: one probe per endpoint, a burst has two calls per endpoint
  const p10 = get('outage', 'stormguard', 10000, 'page-load');
  const q10 = get('outage', 'stormguard-probes2', 10000, 'page-load');
  if (p10 && q10) {
    const p60 = get('outage', 'stormguard', 60000, 'page-load');
    const q60 = get('outage', 'stormguard-probes2', 60000, 'page-load');
    notes.push(`**A page load's first burst after an outage meets a half-open breaker per endpoint.** It lets one call through ` +
      `(\`halfOpenProbes: 1\`); the burst's second call to the same endpoint, sent at the same moment, waits for that probe's ` +
      `outcome (the half-open hold of issue 26; before it, that call was rejected with \`CircuitOpenError\` and the client's next ` +
      `burst was up to 10 s away). Measured after the 10 s outage: recovery ` +
      `${rec(p10)}, ${br(p10).rejectedAfterFault ?? '?'} calls rejected after the fault, success ${pct(p10.successFromFault)}; with ` +
      `\`halfOpenProbes: 2\`: recovery ${rec(q10)}, ${br(q10).rejectedAfterFault ?? '?'} rejected, success ${pct(q10.successFromFault)}` +
      (p60 && q60 ? ` (60 s outage: ${rec(p60)} against ${rec(q60)}; probe load ${fixed(p60.probeLoad?.share)} against ${fixed(q60.probeLoad?.share)})` : '') +
      `.`);
  }

  // 4. the probe load of the 60 s outage, and what a longer open period buys
  const o60 = get('outage', 'stormguard', 60000);
  const m8 = get('outage', 'stormguard-maxOpen8000', 60000);
  const m30 = get('outage', 'stormguard-maxOpen30000', 60000);
  const o60p = get('outage', 'stormguard', 60000, 'page-load');
  const ok60p = get('outage', 'stormguard-originKey', 60000, 'page-load');
  if (o60?.probeLoad) {
    notes.push(`**Probe load through the 60 s outage.** With the open period a constant 2 s, a steady client probes with the first ` +
      `call after it: its calls come every second and its probe fails at once, so one attempt every 3 s, a third of its load ` +
      `(measured ${fixed(o60.probeLoad.share)}; recovery ${rec(o60)}). ` +
      (m8 && m30 ? `Letting failed probes double the period thins that out and costs recovery: \`maxOpenMs: 8000\` ` +
        `${fixed(m8.probeLoad?.share)} (recovery ${rec(m8)}), \`30000\` ${fixed(m30.probeLoad?.share)} (recovery ${rec(m30)}). ` : '') +
      (o60p?.probeLoad ? `A page load probes each of its 3 endpoints with its next burst, one of the two calls per endpoint: ` +
        `${fixed(o60p.probeLoad.share)} of its load` +
        (ok60p?.probeLoad ? `; with one breaker for the whole backend (every call passing \`breakerKey\`: the origin) ` +
          `${fixed(ok60p.probeLoad.share)}, but then a single probe decides for all six calls of a burst: recovery ${rec(ok60p)} ` +
          `(default keys ${rec(o60p)})` : '') + '.' : ''));
  }

  // 5. the sensitivity of the 10 s storm to each default
  const m1 = get('outage', 'stormguard-minRetries1');
  const c5 = get('outage', 'stormguard-consecutive5');
  const d10 = get('outage', 'stormguard');
  if (d10 && (m1 || c5)) {
    const row = (r) => `amplification ${amp(r)}, peak ${fixed(r.peakRatio)}x, recovery ${rec(r)}, success ${pct(r.successFromFault)}`;
    notes.push(`**The 10 s outage, one default at a time** (steady; the brownouts are in the sensitivity table): defaults ${row(d10)}` +
      (m1 ? `; \`minRetries: 1\` ${row(m1)}` : '') + (c5 ? `; \`consecutiveFailures: 5\` ${row(c5)}` : '') +
      (get('outage', 'stormguard-maxOpen30000') ? `; \`maxOpenMs: 30000\` ${row(get('outage', 'stormguard-maxOpen30000'))}` : '') + '.');
  }
  return notes.length ? notes.map((n, i) => `${i + 1}. ${n}`).join('\n') + '\n\n' : '';
}

function sizePart(res) {
  const sg = res.size?.libs.find((l) => l.name === 'stormguard');
  if (!sg || sg.total.gzip <= SIZE_TARGET_GZIP) return '';
  const tw = res.twiggy && !res.twiggy.skipped ? res.twiggy : null;
  let md = `### Size: ${kb(sg.total.gzip)} gzip against the ${kb(SIZE_TARGET_GZIP)} target\n\n` +
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
      `gzip of wasm and 3.3 KB of glue (measured 2026-11-30; a one-function module of the same toolchain: 13.7 KB), which leaves ` +
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
