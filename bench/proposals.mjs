// The part of RESULTS.md that explains stormguard's misses: which default
// holds a figure back, by how much (the variants run beside the defaults in
// the same storm batches), and the change proposed. Numbers come from the run.
import { fixed, kb, mdTable, pct } from './lib.mjs';
import { evaluateTargets, stormRow } from './report.mjs';
import { SCHEMA_VARIANT, VARIANTS } from './storm.mjs';

const rec = (r) => (r.recoveryMs === null ? 'never' : `${(r.recoveryMs / 1000).toFixed(1)} s`);

function stormPart(res) {
  const S = res.storm;
  const names = ['none', 'cockatiel', 'stormguard', 'stormguard-minRetries1', 'stormguard-proposed', 'stormguard-adaptive', SCHEMA_VARIANT];
  if (!S.runs.some((r) => r.strategy === 'stormguard-proposed')) {
    return 'The storm variants that measure what each default costs run in the full run only (not in --quick).\n';
  }
  const rows = [];
  for (const sc of S.scenarios) {
    for (const n of names) {
      const r = stormRow(S, sc.name, n);
      if (r) rows.push([sc.name, n, fixed(r.amplification), `${fixed(r.peakRatio)}x`, rec(r), pct(r.successFromFault)]);
    }
  }
  const get = (sc, n) => stormRow(S, sc, n);
  const d = get('outage', 'stormguard');
  const m1 = get('outage', 'stormguard-minRetries1');
  const p = get('outage', 'stormguard-proposed');
  const ck = get('outage', 'cockatiel');
  const bd = get('brownout', 'stormguard');
  const bm1 = get('brownout', 'stormguard-minRetries1');
  const bp = get('brownout', 'stormguard-proposed');
  const bn = get('brownout', 'none');
  const proposedVerdicts = evaluateTargets(res, 'stormguard-proposed');
  const defaultVerdicts = evaluateTargets(res, 'stormguard').filter((v) => v.area === 'storm');
  const missed = defaultVerdicts.filter((v) => !v.met).length;
  const missedP = proposedVerdicts.filter((v) => !v.met);

  let md = `### Storm: what holds the defaults back\n\n` +
    `Beside the defaults, the same storm batches ran two variants (one client per logical client as always): ` +
    `**stormguard-minRetries1** = \`${JSON.stringify(VARIANTS['stormguard-minRetries1'])}\` and **stormguard-proposed** = ` +
    `\`${JSON.stringify(VARIANTS['stormguard-proposed'])}\`.\n\n` +
    mdTable(['fault', 'strategy', 'amplification', 'peak', 'recovery', 'success from fault on'], rows) + '\n\n';
  md += `With the API.md defaults stormguard misses ${missed} of the ${defaultVerdicts.length} storm targets; with the proposed ` +
    `options it misses ${missedP.length}${missedP.length ? ` (${missedP.map((v) => `${v.target}: ${v.measured}`).join('; ')})` : ''}.\n\n`;

  const bOpen = (r) => (r.breaker ? pct(r.breaker.clientsOpenedInFault, 0) : '?');
  md += `1. **\`budget.minRetries: 3\` makes the burst.** The budget is per client, and a client polling once a second has ` +
    `about 10 calls in the 10 s window, so the ratio term (0.1 x calls) is worth one retry while the floor is worth three. When a ` +
    `fault starts, every client may spend its three retries at once (full jitter over 0-200 ms, then 0-400 ms), so the first ` +
    `second of the fault carries up to three attempts per client: peak ${fixed(d.peakRatio)}x in the outage, ${fixed(bd.peakRatio)}x ` +
    `in the brownout. With a floor of 1 the peaks are ${fixed(m1.peakRatio)}x and ${fixed(bm1.peakRatio)}x. In the brownout the ` +
    `smaller burst also keeps the breakers shut (${bOpen(bd)} of the clients' breakers opened with the defaults, ${bOpen(bm1)} with a ` +
    `floor of 1), and since a recovered window needs 99 % of its calls answered, even a few clients rejecting on an open circuit ` +
    `for their 5 s hold recovery back: ${rec(bd)} with the defaults, ${rec(bm1)} with a floor of 1 (none: ${rec(bn)}). Alone, the ` +
    `lower floor does not help the outage (recovery ${rec(m1)}, success ${pct(m1.successFromFault)}): with fewer failures per ` +
    `second the breaker opens even later, so it goes with the breaker change below. A floor of 0 would mean no retry at all ` +
    `for a client under 10 calls per second (the budget checks every suffix of its window, and the last 1 s bucket holds one ` +
    `call), which is why 1, not 0, is proposed.\n`;
  md += `2. **\`retry.baseDelayMs: 200\` keeps the one retry in the same second.** Full jitter over 0-200 ms puts the retry of a ` +
    `call that failed at once (a 503 in the outage) in the same 1 s window as the call; 1000 ms spreads it over the next second. ` +
    `Together with the breaker change it brings the outage peak to ${fixed(p.peakRatio)}x (target 1.5x).\n`;
  const br = (r) => r.breaker ?? {};
  const openedText = (r) => (br(r).firstOpenMedianMs != null
    ? `${pct(br(r).clientsOpenedInFault, 0)} of the clients opened their breaker during the outage, a median ${(br(r).firstOpenMedianMs / 1000).toFixed(1)} s into it; ` +
      `${pct(br(r).notClosedAtFaultEnd, 0)} were open or half-open when it ended, and open circuits rejected ${br(r).rejectedAfterFault} calls started after it`
    : 'no breaker opened');
  md += `3. **The breaker (failure rate > 0.5 over a 60 s window, \`minSamples: 10\`, \`openMs: 5000\` doubling to 30 s) opens late ` +
    `and stays open past the fault.** The window still holds the client's successes from before the fault, so a client making about ` +
    `one attempt a second needs more than ten failures before it opens. Measured with the defaults: ${openedText(d)}. That is too late ` +
    `to cut the outage's amplification (${fixed(d.amplification)}, cockatiel ${fixed(ck.amplification)}), yet the 5 s open period (doubled ` +
    `after a failed probe) still rejects calls after the backend is back: outage recovery ${rec(d)}, success ${pct(d.successFromFault)} ` +
    `against none's ${pct(get('outage', 'none').successFromFault)}. With \`consecutiveFailures: 3\` and a constant 2 s open period ` +
    `(\`openMs: 2000, maxOpenMs: 2000\`): ${openedText(p)}; amplification ${fixed(p.amplification)}, recovery ${rec(p)}, ` +
    `success ${pct(p.successFromFault)}.\n\n`;
  md += `What no choice of defaults reaches here: the brownout's recovery "no slower than none" (none ${rec(bn)}, proposed ${rec(bp)}) ` +
    `together with the outage's amplification at or below cockatiel's. Sending fewer than half the calls through an outage ` +
    `needs a breaker that is open for most of it, and a breaker that is open when the fault ends rejects calls that ` +
    `"none" (which keeps no state) already gets answered; the open period bounds that delay, and 2 s is the trade proposed. ` +
    `Cockatiel's short outage recovery (${rec(ck)}) comes from its \`halfOpenAfter\` (10 s) matching this fault's length (10 s): ` +
    `its breakers open a second or two into the fault and probe a second or two after it ends; after a longer outage the same ` +
    `policy keeps rejecting for up to 10 s once the backend is back. The cost of dropping the doubling (\`maxOpenMs: 2000\`): ` +
    `through a long outage every client keeps probing every 2 s, about half its normal load, where the doubling would thin that ` +
    `to one probe per 30 s; with the doubling kept, a client whose probe failed late in the fault stays open for up to twice ` +
    `its last period after the fault ends, which is what makes the defaults' outage recovery slow.\n\n`;
  const sch = S.scenarios.map((sc) => [sc.name, get(sc.name, SCHEMA_VARIANT)]).filter(([, r]) => r);
  if (sch.length) {
    const each = (f) => sch.map(([n, r]) => `${f(r)} (${n})`).join(', ');
    md += `The row **${SCHEMA_VARIANT}** is the defaults again with each client polling through \`client.schema(url)\` instead ` +
      `of \`request()\` (in a batch of its own): the same traffic (amplification ${each((r) => fixed(r.amplification))}; ` +
      `peak ${each((r) => `${fixed(r.peakRatio)}x`)}), but a call whose network attempts fail or meet an open circuit is ` +
      `answered with the client's last good copy (\`stale: true\`; kept in memory in Node, LocalStorage in a page): success ` +
      `from fault on ${each((r) => pct(r.successFromFault))}, recovery ${each(rec)}. That is the incident's "last cached UI ` +
      `schema instead of a blank page", and what this benchmark counts as answered ("data or cached fallback"). The targets ` +
      `stay measured on \`request()\`, which serves no copy: not every endpoint has a last good answer worth showing.\n\n`;
  }
  md += `Proposed change to API.md's defaults: \`budget.minRetries\` 3 -> 1, \`retry.baseDelayMs\` 200 -> 1000, ` +
    `\`breaker.consecutiveFailures\` off -> 3, \`breaker.openMs\` 5000 -> 2000, \`breaker.maxOpenMs\` 30000 -> 2000 ` +
    `(the last two trade quiet during long outages for recovery after short ones; keep 30000 if long outages matter more).\n`;
  return md;
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
