// Turns the results of a run into RESULTS.md (with SVG charts beside it), the
// target verdicts, and the summary table printed at the end of `npm run bench`.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixed, kb, mdTable, pct, textTable } from './lib.mjs';
import { barChart, colorOf, lineChart, panelChart } from './svg.mjs';
import { SIZE_TARGET_GZIP } from './size.mjs';
import { VARIANT_OF } from './storm.mjs';
import { DESCRIPTIONS } from './strategies.mjs';

const sec = (ms) => (ms === null || ms === undefined ? 'never' : `${(ms / 1000).toFixed(1)} s`);
const neverLabel = (run) => `never (${Math.round((run.runEndMs - run.faultEndMs) / 1000)} s)`;
export const recoveryText = (run) => (run.recoveryMs === null ? neverLabel(run) : sec(run.recoveryMs));
const recoveryValue = (run) => (run.recoveryMs === null ? Infinity : run.recoveryMs);
export const lengthLabel = (ms) => `${ms / 1000} s`;

/**
 * Storm results of runs made before fault lengths and profiles (one 10 s fault, the steady poller)
 * read as such, so a report can mix sections from different runs.
 */
export function normalizeStorm(storm) {
  if (!storm || storm.lengths) return storm;
  const faultMs = storm.config?.faultMs ?? 10000;
  for (const r of storm.runs) {
    r.faultMs ??= faultMs;
    r.profile ??= 'steady';
  }
  return { ...storm, lengths: [faultMs], profiles: { steady: { name: 'steady', label: 'steady poller (1 call/s per client)' } } };
}

/** The run of `strategy` in `scenario` at a fault length and profile (default: 10 s, steady). */
export function stormRow(storm, scenario, strategy, faultMs = 10000, profile = 'steady') {
  return storm?.runs.find((r) => r.scenario === scenario && r.strategy === strategy && r.faultMs === faultMs && r.profile === profile);
}

/** The (length, profile) cases a storm run has, steady first, shortest first. */
export function stormCases(storm) {
  const seen = new Map();
  for (const r of storm.runs) seen.set(`${r.profile}/${r.faultMs}`, { faultMs: r.faultMs, profile: r.profile });
  const prank = (p) => (p === 'steady' ? 0 : 1);
  return [...seen.values()].sort((a, b) => a.faultMs - b.faultMs || prank(a.profile) - prank(b.profile));
}
const caseLabel = (c) => `${lengthLabel(c.faultMs)} ${c.profile}`;

// The storm targets of issues 15 and 26, for every fault length and both profiles, with request() and the
// defaults. Outage amplification: <= cockatiel's always, and <= 0.55, except a page load's at 3 and 10 s,
// where one burst cannot learn before it fails: <= 1.0 (no library's) there (issue 26).
export const STORM_TARGETS = {
  amplification: { max: 0.55, pageLoadShort: { max: 1.0, belowMs: 60000 } },
  peak: { max: 1.5 },
  recoveryMs: { max: 2000 },
  success: { outagePoints: 0.03 },
  probeLoad: { max: 0.5, faultMs: 60000 },
};

/**
 * The storm verdicts of `who` (a strategy label): one per target, fault, length and profile, each with
 * its `row` (the matrix row it belongs to) and `col` (the case).
 */
export function stormVerdicts(storm, who = 'stormguard') {
  const S = normalizeStorm(storm);
  const out = [];
  const T = STORM_TARGETS;
  for (const c of stormCases(S)) {
    const col = caseLabel(c);
    const get = (sc, st) => stormRow(S, sc, st, c.faultMs, c.profile);
    for (const sc of S.scenarios.map((x) => x.name)) {
      const sg = get(sc, who);
      if (!sg) continue;
      const none = get(sc, 'none');
      const push = (row, target, measured, met) => out.push({ area: 'storm', row, col, scenario: sc, faultMs: c.faultMs, profile: c.profile, target: `${sc} ${col}: ${target}`, measured, met });
      if (sc === 'outage') {
        const ck = get(sc, 'cockatiel');
        const short = c.profile === 'page-load' && c.faultMs < T.amplification.pageLoadShort.belowMs;
        const max = short ? T.amplification.pageLoadShort.max : T.amplification.max;
        const limit = Math.min(max, ck ? ck.amplification : Infinity);
        push('outage: amplification <= cockatiel\'s and <= 0.55 (page loads at 3, 10 s: <= 1.0)', `amplification <= cockatiel's and <= ${max}`,
          `${fixed(sg.amplification)}${ck ? ` (cockatiel ${fixed(ck.amplification)})` : ''}`, sg.amplification <= limit + 1e-9);
      }
      push(`${sc}: peak <= 1.5x`, 'peak 1 s / baseline <= 1.5x', `${fixed(sg.peakRatio)}x`, sg.peakRatio <= T.peak.max + 1e-9);
      push(`${sc}: recovery <= 2.0 s`, 'recovery <= 2.0 s', recoveryText(sg), recoveryValue(sg) <= T.recoveryMs.max + 1e-9);
      if (none) {
        const slack = sc === 'outage' ? T.success.outagePoints : 0;
        push(`${sc}: success >= none's${slack ? ' - 3 points' : ''}`, `success from the fault on >= none's${slack ? ' - 3 points' : ''}`,
          `${pct(sg.successFromFault)} (none ${pct(none.successFromFault)})`, sg.successFromFault >= none.successFromFault - slack - 1e-9);
      }
      if (sc === 'outage' && c.faultMs === T.probeLoad.faultMs && sg.probeLoad) {
        push('outage 60 s: probe load <= 0.5 of baseline', 'probe load <= 0.5 of baseline', fixed(sg.probeLoad.share), sg.probeLoad.share <= T.probeLoad.max + 1e-9);
      }
    }
  }
  return out;
}

/** The storm verdicts as a matrix: a row per target, a column per (length, profile). */
export function targetMatrix(storm, who = 'stormguard') {
  const v = stormVerdicts(storm, who);
  if (!v.length) return null;
  const rows = [...new Set(v.map((x) => x.row))];
  const cols = [...new Set(v.map((x) => x.col))];
  const cell = (r, c) => v.find((x) => x.row === r && x.col === c);
  return {
    head: ['target', ...cols],
    rows: rows.map((r) => [r, ...cols.map((c) => cell(r, c))]),
    met: v.filter((x) => x.met).length,
    total: v.length,
  };
}

/** Every target, with the measured value and whether it is met: size and overhead (issue 7), storm (issue 15). */
export function evaluateTargets(res, who = 'stormguard') {
  const out = [];
  if (res.size && who === 'stormguard') {
    const sg = res.size.libs.find((l) => l.name === 'stormguard');
    if (sg) {
      out.push({ area: 'size', target: `stormguard (wasm + JS as bundled) <= ${kb(SIZE_TARGET_GZIP)} gzip (issue 19)`, measured: `${kb(sg.total.gzip)} gzip`, met: sg.total.gzip <= SIZE_TARGET_GZIP });
    }
  }
  if (res.startup && who === 'stormguard') {
    const sg = res.startup.libs.stormguard;
    const ky = res.startup.libs.ky;
    if (sg && ky) {
      const gap = sg.readyMs.median - ky.readyMs.median;
      out.push({ area: 'start-up', target: 'import -> ready within 10 ms of ky (cold median, issue 19)', measured: `${fixed(sg.readyMs.median, 1)} ms vs ky ${fixed(ky.readyMs.median, 1)} ms (+${fixed(gap, 1)})`, met: gap <= 10 });
    }
  }
  if (res.overhead && who === 'stormguard') {
    for (const [mode, byName] of Object.entries(res.overhead.modes)) {
      const sg = byName.stormguard;
      if (!sg) continue;
      const label = mode === 'sequential' ? 'sequential' : 'concurrency 6';
      out.push({ area: 'overhead', target: `${label}: median <= 1.10 x raw fetch`, measured: `x${fixed(sg.medianRatio)}`, met: sg.medianRatio <= 1.1 });
      const others = ['ky', 'cockatiel'].filter((n) => byName[n]);
      out.push({
        area: 'overhead',
        target: `${label}: median ahead of ky and cockatiel`,
        measured: `${fixed(sg.median, 3)} ms vs ${others.map((n) => `${n} ${fixed(byName[n].median, 3)}`).join(', ')}`,
        met: others.every((n) => sg.median < byName[n].median),
      });
    }
  }
  if (res.firstload && who === 'stormguard') {
    const sg = res.firstload.builds.stormguard;
    const ky = res.firstload.builds.ky;
    for (const [c, pctMax] of [['slow', 10], ['slow-cpu', 15]]) {
      const a = sg?.conditions[c]?.firstDataMs.median;
      const b = ky?.conditions[c]?.firstDataMs.median;
      if (a === undefined || b === undefined) continue;
      out.push({
        area: 'first load',
        target: `first data, ${res.firstload.conditions[c].label}: within ${pctMax} % of ky's (median, issue 39)`,
        measured: `${Math.round(a)} ms vs ky ${Math.round(b)} ms (${a >= b ? '+' : ''}${fixed((100 * (a - b)) / b, 1)} %)`,
        met: a <= b * (1 + pctMax / 100),
      });
    }
    // the package's share: the stormguard build's critical path less the plain fetch build's (the same app)
    const crit = (b) => Object.values(res.firstload.builds[b]?.conditions ?? {})[0]?.criticalBytes;
    if (crit('stormguard') !== undefined && crit('fetch') !== undefined) {
      const extra = crit('stormguard') - crit('fetch');
      out.push({
        area: 'first load',
        target: 'the package\'s JS + wasm on the critical path <= 25 KB gzip (stormguard build less plain fetch build, issue 39)',
        measured: `${kb(extra)} (${kb(crit('stormguard'))} - ${kb(crit('fetch'))}; ky's build: +${kb(crit('ky') - crit('fetch'))})`,
        met: extra <= 25 * 1024,
      });
    }
  }
  if (res.storm) out.push(...stormVerdicts(res.storm, who));
  return out;
}

/** The summary table: one line per figure, stormguard beside the others. */
export function summary(res) {
  const head = ['figure', 'stormguard', 'raw/none', 'naive', 'ky', 'cockatiel'];
  const rows = [];
  if (res.size) {
    const g = (n) => {
      const l = res.size.libs.find((x) => x.name === n);
      return l ? `${(l.total.gzip / 1024).toFixed(1)} KB` : '—';
    };
    rows.push(['size, gzip (JS + wasm)', g('stormguard'), '0', '—', g('ky'), g('cockatiel')]);
  }
  if (res.startup) {
    const g = (n) => (res.startup.libs[n] ? `${res.startup.libs[n].readyMs.median.toFixed(1)} ms` : '—');
    rows.push(['start-up import -> ready, median', g('stormguard'), '0', '—', g('ky'), g('cockatiel')]);
  }
  if (res.overhead) {
    for (const [mode, b] of Object.entries(res.overhead.modes)) {
      const m = mode === 'sequential' ? 'sequential' : 'concurrency 6';
      const g = (n) => (b[n] ? `${b[n].median.toFixed(2)} ms x${b[n].medianRatio.toFixed(2)}` : '—');
      const p = (n) => (b[n] ? `${b[n].p99.toFixed(2)} ms x${b[n].p99Ratio.toFixed(2)}` : '—');
      rows.push([`per call ${m}, median`, g('stormguard'), g('raw'), '—', g('ky'), g('cockatiel')]);
      rows.push([`per call ${m}, p99`, p('stormguard'), p('raw'), '—', p('ky'), p('cockatiel')]);
    }
    const cpu = res.overhead.cpu?.libs;
    if (cpu) {
      const g = (n) => (cpu[n] ? `${cpu[n].medianUs.toFixed(0)} µs` : '—');
      rows.push(['CPU per call, stub fetch, median', g('stormguard'), g('raw'), '—', g('ky'), g('cockatiel')]);
    }
  }
  if (res.firstload) {
    const F = res.firstload;
    for (const c of Object.keys(F.conditions)) {
      const g = (b) => (F.builds[b]?.conditions[c] ? `${Math.round(F.builds[b].conditions[c].firstDataMs.median)} ms` : '—');
      rows.push([`first data, ${F.conditions[c].label}, median`, g('stormguard'), g('fetch'), '—', g('ky'), '—']);
    }
    const k = (b) => (F.builds[b] ? kb(Object.values(F.builds[b].conditions)[0].criticalBytes) : '—');
    rows.push(['first load: app JS + wasm before 1st request, gzip', k('stormguard'), k('fetch'), '—', k('ky'), '—']);
  }
  if (res.storm) {
    // the rows of the anchors' set-up: 10 s faults, the steady poller (else the first case there is)
    const S = normalizeStorm(res.storm);
    const cases = stormCases(S);
    const c = cases.find((x) => x.faultMs === 10000 && x.profile === 'steady') ?? cases[0];
    for (const s of S.scenarios) {
      const r = (st) => stormRow(S, s.name, st, c.faultMs, c.profile);
      const cell = (st, f) => (r(st) ? f(r(st)) : '—');
      const line = (label, f) => rows.push([`${s.name} ${caseLabel(c)}: ${label}`, ...['stormguard', 'none', 'naive', 'ky', 'cockatiel'].map((st) => cell(st, f))]);
      line('amplification', (x) => fixed(x.amplification));
      line('peak 1 s / baseline', (x) => `${fixed(x.peakRatio)}x`);
      line('recovery', recoveryText);
      line('success from fault on', (x) => pct(x.successFromFault));
      line('max in-flight per client', (x) => String(x.maxInflightPerClient));
    }
    for (const p of [...new Set(cases.map((x) => x.profile))]) {
      const r = (st) => stormRow(S, 'outage', st, 60000, p);
      if (!r('stormguard')?.probeLoad) continue;
      rows.push([`outage 60 s ${p}: probe load / baseline`, ...['stormguard', 'none', 'naive', 'ky', 'cockatiel'].map((st) => (r(st)?.probeLoad ? fixed(r(st).probeLoad.share) : '—'))]);
    }
  }
  if (res.memory) {
    const m = res.memory.runs;
    const mb = (b) => `${(b / 1048576).toFixed(2)} MB`;
    const heap = (r) => (r ? `${mb(r.afterWarmup.heapUsed)} -> ${mb(r.after.heapUsed)}` : '—');
    rows.push([`JS heap, ${res.memory.calls / 1000}k calls`, heap(m.stormguard), heap(m.raw), '—', '—', '—']);
    if (m.stormguard) rows.push([`wasm memory, ${res.memory.calls / 1000}k calls`, `${mb(m.stormguard.before.wasmMemory)} -> ${mb(m.stormguard.after.wasmMemory)}`, '—', '—', '—', '—']);
  }
  return { head, rows, text: textTable(head, rows) };
}

// ---- RESULTS.md

function sizeSection(res, charts) {
  const { libs } = res.size;
  const sg = libs.find((l) => l.name === 'stormguard');
  const rows = libs.map((l) => [
    `${l.name} ${l.version}`,
    l.name === 'stormguard' ? `JS ${kb(l.parts.js.raw)} + wasm ${kb(l.parts.wasm.raw)} = **${kb(l.total.raw)}**` : kb(l.total.raw),
    l.name === 'stormguard' ? `JS ${kb(l.parts.js.gzip)} + wasm ${kb(l.parts.wasm.gzip)} = **${kb(l.total.gzip)}**` : kb(l.total.gzip),
    l.name === 'stormguard' ? `JS ${kb(l.parts.js.brotli)} + wasm ${kb(l.parts.wasm.brotli)} = **${kb(l.total.brotli)}**` : kb(l.total.brotli),
    sg ? `x${fixed(l.total.gzip / sg.total.gzip)}` : '',
    '`' + l.entry.replace(/\s+/g, ' ') + '`',
  ]);
  charts['size.svg'] = barChart({
    title: 'Size as an app ships it, gzip -9 (KB)',
    unit: 'KB',
    ref: { value: SIZE_TARGET_GZIP / 1024, label: `target ${SIZE_TARGET_GZIP / 1024} KB` },
    bars: libs.map((l) => ({
      label: l.name,
      segments: l.parts.wasm
        ? [{ label: 'JS', value: l.parts.js.gzip / 1024, color: '#6baed6' }, { label: 'wasm', value: l.parts.wasm.gzip / 1024, color: '#1f77b4' }]
        : [{ label: 'JS', value: l.parts.js.gzip / 1024, color: '#6baed6' }],
    })),
  });
  let md = `## 1. Size\n\nEach library bundled by esbuild (\`--bundle --minify --format=esm\`, browser platform) from an entry that ` +
    `imports what an app using it needs (last column); stormguard's bundle plus its \`.wasm\`, which it loads beside itself. ` +
    `Each file compressed on its own (gzip -9, brotli -q 11), as a server would send it.\n\n`;
  md += mdTable(['library', 'raw', 'gzip', 'brotli', 'gzip vs stormguard', 'entry'], rows) + '\n\n![size](size.svg)\n\n';
  if (sg) {
    md += `Target (issue 19): <= ${kb(SIZE_TARGET_GZIP)} gzip in all. Measured: **${kb(sg.total.gzip)}** — ${sg.total.gzip <= SIZE_TARGET_GZIP ? 'met' : `**not met** (${kb(sg.total.gzip - SIZE_TARGET_GZIP)} over; the wasm alone is ${kb(sg.parts.wasm.gzip)})`}.\n\n`;
  }
  const tw = res.twiggy;
  if (tw && !tw.skipped) {
    md += `### What the wasm is made of (twiggy)\n\n` +
      `twiggy ${(tw.version ?? '').replace(/^twiggy(-opt)?\s*/, '')} over the same build as \`pkg/\` (\`${tw.source}\` through wasm-bindgen and \`wasm-opt -Oz\`) with the ` +
      `name section kept (\`wasm-opt -g\`): ${kb(tw.itemsBytes)} of items (the shipped file is ${kb(res.size.libs.find((l) => l.name === 'stormguard')?.parts.wasm.raw ?? 0)}) ` +
      `plus ${kb(tw.nameSectionBytes)} of names that do not ship. wasm-opt inlines small functions into their callers, so a ` +
      `caller's size includes what it inlined (the policy core is mostly inside the call driver's futures and the export shims).\n\n`;
    md += mdTable(['part', 'bytes', 'share'], tw.byCrate.slice(0, 14).map((c) => [c.crate, String(c.bytes), pct(c.share)])) + '\n\n';
    md += mdTable(['largest items', 'bytes', 'share'], tw.top.slice(0, 15).map((c) => ['`' + c.name.replace(/\|/g, '\\|') + '`', String(c.bytes), pct(c.share)])) + '\n\n';
  } else if (tw?.skipped) {
    md += `twiggy breakdown: skipped (${tw.skipped}).\n\n`;
  }
  return md;
}

function startupSection(res, charts) {
  const s = res.startup;
  const names = Object.keys(s.libs);
  charts['startup.svg'] = barChart({
    title: `Start-up in Chromium: import() -> ready client, median of ${s.loads} cold loads (ms)`,
    unit: 'ms',
    bars: names.map((n) => ({ label: n, value: s.libs[n].readyMs.median, color: colorOf(n) })),
  });
  const rows = names.map((n) => {
    const l = s.libs[n];
    const warm = l.warmReadyMs ? fixed(l.warmReadyMs.median, 1) : '—';
    return [n, fixed(l.importMs.median, 1), l.clientMs ? fixed(l.clientMs.median, 1) : '—', fixed(l.readyMs.median, 1), fixed(l.readyMs.p90, 1),
      l.answerMs ? fixed(l.answerMs.median, 1) : '—', warm, fixed(l.navToReadyMs.median, 1)];
  });
  let md = `## 2. Start-up\n\nA fresh browser context (empty cache) per cold load, the loads of the libraries alternating; each page ` +
    `\`import()\`s the library's bundle and makes it ready for a first call (stormguard: \`createClientSync()\`, a client whose calls ` +
    `can be made at once, then its \`ready\`, once the wasm is fetched, compiled and instantiated; ky/ofetch/axios: \`create()\`; ` +
    `cockatiel: the storm benchmark's policy). ` +
    `Warm: the same page loaded again in that context (files from the HTTP cache, and whatever V8 cached of their code). ` +
    `\`stormguard+preload\`: a page whose HTML preloads the wasm (\`<link rel="preload" as="fetch" crossorigin>\`). ` +
    `\`stormguard+call\`: a \`request()\` made as soon as the client is, its answer timed (the boot build's attempt, or the engine's). ` +
    `${s.pkgs ? `\`stormguard@<label>\`: another build (${s.pkgs.map((p) => `${p.label}: \`${p.dir}\``).join(', ')}), its loads alternating with this one's. ` : ''}` +
    `Times in ms from just before the \`import()\`; the last column from navigation start.\n\n` +
    mdTable(['library', 'import, median', 'import -> client, median', 'import -> ready, median', 'import -> ready, p90', 'import -> answer, median',
      'warm import -> ready, median', 'navigation -> ready, median'], rows) +
    '\n\n![start-up](startup.svg)\n\n';
  if (s.node) {
    md += `**Node ${s.nodeVersion ?? ''}, cold**: a process per load, the builds alternating; from just before the \`import()\` of the Node ` +
      `entry to \`createClientSync()\`'s client, to its \`ready\` and to the answer of a \`request()\` made at once (medians, ms).\n\n` +
      mdTable(['build', 'import', 'import -> client', 'import -> ready', 'import -> answer'], Object.entries(s.node).map(([label, n]) =>
        [label, fixed(n.importMs.median, 1), fixed(n.clientMs.median, 1), fixed(n.readyMs.median, 1), fixed(n.answerMs.median, 1)])) + '\n\n';
  }
  return md;
}

function overheadSection(res, charts) {
  const o = res.overhead;
  const names = Object.keys(o.modes.sequential);
  let md = `## 3. Per-call overhead\n\nHeadless Chromium (${o.userAgent.match(/Chrome\/[\d.]+/)?.[0] ?? ''}), page and fault server on loopback ` +
    `(same origin, \`GET /status/200\`, a 15-byte JSON body, every URL unique so nothing is de-duplicated). ` +
    `${o.config.n} sequential calls per library, interleaved call by call (the order rotating every call), and ${o.config.n} calls ` +
    `at concurrency 6 per library in blocks of ${o.config.block} that alternate between the libraries (the order rotates every ` +
    `round), after ${o.config.warmup} warm-up calls each. Each call is timed ` +
    `from the call to the parsed body. The page is cross-origin isolated (${o.isolated ? 'yes' : 'no'}), so \`performance.now()\` ` +
    `resolves 5 µs. Strategies: ${names.map((n) => `**${n}**: ${n === 'cockatiel' ? DESCRIPTIONS['cockatiel (retry + timeout)'] : n.includes('@') ? `the row ${n.split('@')[0]} of the build ${n.split('@')[1]}` : n === 'stormguard-bare' ? 'createClient({ retry: false, budget: false, breaker: false, concurrency: false, dedupe: false }): what the wasm boundary costs without the policies' : DESCRIPTIONS[n]}`).join('; ')}.\n\n`;
  for (const [mode, b] of Object.entries(o.modes)) {
    md += `**${mode === 'sequential' ? 'Sequential' : 'Concurrency 6'}**\n\n` + mdTable(
      ['library', 'median', 'x raw', 'p99', 'x raw', 'mean', 'calls/s'],
      names.map((n) => [n, `${fixed(b[n].median, 3)} ms`, fixed(b[n].medianRatio), `${fixed(b[n].p99, 3)} ms`, fixed(b[n].p99Ratio), `${fixed(b[n].mean, 3)} ms`, fixed(b[n].callsPerSecond, 0)]),
    ) + '\n\n';
  }
  charts['overhead.svg'] = barChart({
    title: 'Per call, median (ms): sequential | concurrency 6',
    unit: 'ms',
    digits: 2,
    bars: Object.entries(o.modes).flatMap(([mode, b]) => names.map((n) => ({
      label: `${n} ${mode === 'sequential' ? 'seq' : 'c6'}`, value: b[n].median, color: colorOf(n),
    }))),
  });
  md += '![overhead](overhead.svg)\n\n';
  if (o.cpu) {
    md += `**CPU per call, the network taken out.** The page's global \`fetch\` replaced by a stub that answers at once ` +
      `(a \`Response\` of the same body), ${o.cpu.config.rounds} blocks of ${o.cpu.config.block} sequential calls per library, ` +
      `the blocks interleaved, after ${o.cpu.config.warmup} warm-up calls each; median µs a call. Each library's own work is all there is ` +
      `here; over a network these add to the fetch. **${o.cpu.config.perId}**: the default client, every URL a new path (per-id ` +
      `URLs), past the 1000 breakers a client keeps, so each call makes a key at the table's cap. The other rows call absolute ` +
      `URLs without options; ${o.cpu.config.relative ? `**${o.cpu.config.relative}**: the default client, \`/item?n=…\` (as apps ` +
      `mostly call); **${o.cpu.config.withOptions}**: the same calls as the stormguard row with an options object of one member ` +
      `(\`{ timeoutMs: 5000 }\`).` : ''}\n\n` +
      mdTable(['library', 'µs a call, median', 'over raw fetch', 'fastest block'], Object.entries(o.cpu.libs).map(([n, v]) => [
        n, fixed(v.medianUs, 1), fixed(v.overRawUs, 1), fixed(v.minUs, 1),
      ])) + '\n\n';
  }
  if (o.stormguardStats) {
    md += `stormguard's own count over the run: ${o.stormguardStats.requests} calls, ${o.stormguardStats.attempts} attempts, ` +
      `${o.stormguardStats.retries} retries (every call went through once).\n\n`;
  }
  return md;
}

/** A run whose load generator could not keep time, or that shared the machine with other work. */
// A run is starved when its load generator fell behind its schedule (event-loop lag p99 over 50 ms), or
// when other processes took over 0.3 cores. The second test is left out while low-priority work ran:
// /proc/stat counts the kernel time of niced processes (a build's file I/O) as 'system', not 'nice', so
// it shows up as other processes although the scheduler preempts them for the benchmark; the lag is then
// the direct measure.
const isStarved = (r) => r.loadGen.loopDelayP99Ms > 50 || (r.batch && r.batch.otherCores > 0.3 && !(r.batch.nicedCores > 0.05));

// strategies drawn in the charts (the variants are in the tables)
const CHARTED = ['none', 'naive', 'ky', 'cockatiel', 'stormguard'];
const ORDER = ['none', 'naive', 'ky', 'cockatiel', 'stormguard'];
const rank = (n) => (ORDER.includes(n) ? ORDER.indexOf(n) : ORDER.length);
const byStrategy = (a, b) => rank(a.strategy) - rank(b.strategy) || a.strategy.localeCompare(b.strategy);
// the probe load is a figure of long outages (breakers open long enough to probe several times)
const probeText = (r) => (r.probeLoad && r.scenario === 'outage' && r.faultMs >= 20000 ? fixed(r.probeLoad.share) : '—');

function stormSection(res, charts, anchors) {
  const S = normalizeStorm(res.storm);
  const c = S.config;
  const cap = c.capacity;
  const capacity = cap.c / (cap.serviceMs / 1000);
  const cases = stormCases(S);
  const profiles = [...new Set(cases.map((x) => x.profile))];
  const cfgOf = (x) => S.configs?.[`${x.profile}/${x.faultMs}`] ?? c;
  const steady = cfgOf(cases.find((x) => x.profile === 'steady') ?? cases[0]);
  const load = (cfg) => ((cfg.clients * (cfg.calls?.length ?? 1)) / (cfg.periodMs / 1000)) / capacity;
  const k = c.clientsScale ?? 1;
  const scaled = !res.meta?.quick && k !== 1
    ? `> **Scaled run:** clients and backend capacity scaled by ${fixed(k, 2)} (${res.meta.cores} cores: the full run scales to ` +
      `cores / 8 unless \`--scale\` says otherwise): the same load (0.75 of capacity), timings and faults with fewer clients, so ` +
      `that the load generators, not the machine, set the pace (see the conditions below).\n\n`
    : '';
  let md = `## 4. Storm\n\n` + scaled +
    `The gateway-and-backend model ([tests/server/README.md](../tests/server/README.md), "Capacity model") on the fault server's \`/capacity\` endpoints: C = ${cap.c} slots of ` +
    `S = ${cap.serviceMs} ms (${capacity} req/s), a FIFO queue of ${cap.queue}, gateway timeout G = ${cap.gatewayMs} ms ` +
    `(the backend still spends a slot on a request the gateway already answered 504). Each logical client is its own strategy ` +
    `instance (one stormguard client, one cockatiel policy, ... as each would be a browser) and calls open loop: on schedule ` +
    `whether or not its previous calls are still running. Two client profiles:\n\n` +
    profiles.map((p) => {
      const cfg = cfgOf(cases.find((x) => x.profile === p));
      return p === 'steady'
        ? `- **steady**: ${cfg.clients} clients, each polling one GET every ${cfg.periodMs / 1000} s from a random phase (baseline load ${fixed(load(cfg))} of capacity);`
        : `- **page-load**: ${cfg.clients} clients, each loading a page every ${cfg.periodMs / 1000} s: a burst of ${cfg.calls?.length ?? '?'} parallel GETs to 3 ` +
          `endpoints (\`/capacity/user\`, \`/capacity/orders\`, \`/capacity/stock\`, two calls each with different queries, so nothing is de-duplicated, ` +
          `one backend behind them), each client's phase random within its own 1/${cfg.clients} of the period so the baseline per second is flat ` +
          `(baseline load ${fixed(load(cfg))} of capacity, as the steady poller's).`;
    }).join('\n') + '\n\n' +
    `Faults of ${S.lengths.map(lengthLabel).join(', ')}: **outage** (every request answered 503 at once), **brownout** (${Math.round(0.3 * cap.c)} slots instead of ${cap.c}), ` +
    `**brownout-shed** (the same brownout on a server that sheds: a queued request that can no longer finish before its gateway ` +
    `deadline is dropped and answered 503 instead of wasting a slot, \`shed: "early"\`). ${steady.warmupMs / 1000} s warm-up, the fault, ` +
    `${steady.recoveryMs / 1000} s recovery; then up to ${steady.drainMs / 1000} s for the calls still running to settle (any left count as failed).\n\n` +
    `Strategies: ${['none', 'naive', 'ky', 'cockatiel', 'stormguard'].map((n) => `**${n}**: ${DESCRIPTIONS[n]}`).join('; ')}. ` +
    `naive and ky run in the 10 s faults only. The variants of stormguard (section "Sensitivity" below) change one default each.\n\n` +
    `Columns: **amplification** = server arrivals in the fault window / logical calls started in it; **peak** = the busiest 1 s ` +
    `window (aligned to the fault's start) from the fault on / the mean arrivals per second over the last 5 s of warm-up; ` +
    `**recovery** = from the fault's end until every following 1 s window (sliding by 100 ms, calls by start time) has a success ratio ` +
    `>= 0.99; **success** = share of the logical calls started from the fault's start to the end that resolved with data within ` +
    `${c.deadlineMs / 1000} s (stormguard's default deadline, the longest of any strategy); **probe load** = attempts per second sent ` +
    `by clients whose breaker for that endpoint was open or half-open when they sent them (stormguard: per endpoint, from its ` +
    `\`breaker\` events; cockatiel: its policy's one breaker), from 10 s into the fault (half-way for shorter ones) to its end, as a ` +
    `share of the baseline; in an outage every such attempt reaches the server; **in-flight** = the most attempts one client had in ` +
    `flight at once (counted in a wrapper around the global fetch that every strategy, stormguard included, calls).\n\n` +
    `### Why Node 20 with the package's Node build is faithful\n\n` +
    `\`pkg/node.js\` instantiates the very \`stormguard_bg.wasm\` that browsers load and wraps it with the same \`core.js\`; every ` +
    `policy (deadline, backoff with crypto jitter, budget, breaker, limiter, dedupe) runs in that wasm, and it calls the host's ` +
    `global \`fetch\`, which in Node is undici making real HTTP/1.1 requests over loopback to a real server, with real ` +
    `AbortController aborts (the server sees the disconnects). What differs from a browser is the HTTP client under fetch (undici ` +
    `instead of Chromium's network stack) and that the "browsers" of a run share one event loop — which is why the load ` +
    `generator's CPU and event-loop lag are reported: they show it kept up. undici's pool per origin has no connection limit, ` +
    `unlike a browser's 6, so the client side never queues (a browser's per-host limit would only lower what reaches the server; a ` +
    `page load's 6 calls fit in it). The clients of one load generator do not act as tabs of one browser: ` +
    `with \`crossTab\` on (the default), a breaker opened by one stormguard client left another client in the same Node ` +
    `process closed (checked while building this benchmark), so each client keeps its own breakers, as a browser of its own would. Each strategy's run has its own server process and its own load-generator process; the runs ` +
    `listed together below ran at the same time (same machine noise), in batches of at most five on this 2-core machine.\n\n`;

  // the conditions of the whole storm section: how busy the machine was, and how much of it was not this benchmark
  const batchList = [...new Map(S.runs.filter((r) => r.batch).map((r) => [`${r.scenario}/${r.profile}/${r.faultMs}/${r.group?.join(',')}`, r.batch])).values()];
  if (batchList.length) {
    const mean = (f) => batchList.reduce((a, b) => a + f(b), 0) / batchList.length;
    const max = (f) => Math.max(...batchList.map(f));
    const lags = S.runs.map((r) => r.loadGen.loopDelayP99Ms).sort((a, b) => a - b);
    md += `**Conditions of this run.** Over its ${batchList.length} batches the machine had on average ${fixed(mean((b) => b.machineBusyCores), 2)} of ` +
      `${res.meta.cores} cores busy, of which ${fixed(mean((b) => b.otherCores), 2)} by processes other than this benchmark (at most ` +
      `${fixed(max((b) => b.otherCores), 2)} in one batch)${batchList.some((b) => b.nicedCores > 0.05) ? `, and ${fixed(mean((b) => b.nicedCores ?? 0), 2)} ` +
      'at low priority (nice 19: builds, which the scheduler preempts for the benchmark)' : ''}; the load generators' event-loop lag p99 was ${fixed(lags[Math.floor(lags.length / 2)], 0)} ms ` +
      `at the median run and ${fixed(lags[lags.length - 1], 0)} ms at the worst. Runs with a lag p99 over 50 ms, or over 0.3 cores used ` +
      `by other processes (when no low-priority work ran: the kernel time of niced processes counts as 'system', not 'nice'), ` +
      `are flagged below; their figures are less reliable than the rest.\n\n`;
  }
  if (S.failed?.length) {
    md += `> **Batches that failed** (their rows are missing): ${S.failed.map((f) => `${f.scenario} ${lengthLabel(f.faultMs)} ${f.profile} [${f.strategies.join(', ')}]: ${f.error}`).join('; ')}.\n\n`;
  }
  const starvedAll = [];
  for (const s of S.scenarios) {
    const runs = S.runs.filter((r) => r.scenario === s.name)
      .sort((a, b) => (a.profile === b.profile ? 0 : a.profile === 'steady' ? -1 : 1) || a.faultMs - b.faultMs || byStrategy(a, b));
    if (!runs.length) continue;
    md += `### ${s.label}\n\n` + mdTable(
      ['fault', 'profile', 'strategy', 'amplification', 'peak 1 s / baseline', 'recovery', 'success from fault on', 'probe load', 'max in-flight per client', 'load gen CPU / lag p99', 'server CPU / lag p99'],
      runs.map((r) => [
        lengthLabel(r.faultMs), r.profile,
        r.strategy === 'stormguard' ? '**stormguard**' : r.strategy,
        fixed(r.amplification), `${fixed(r.peakRatio)}x`, recoveryText(r), pct(r.successFromFault), probeText(r), String(r.maxInflightPerClient),
        `${pct(r.loadGen.cpuShare, 0)} / ${fixed(r.loadGen.loopDelayP99Ms, 0)} ms`, `${pct(r.server.cpuShare, 0)} / ${fixed(r.server.loopDelayP99Ms, 0)} ms`,
      ]),
    ) + '\n\n';
    const batches = [...new Map(runs.map((r) => [`${r.profile}/${r.faultMs}/${r.group?.join(',')}`, r])).values()];
    md += `Ran together: ${batches.map((r) => `[${lengthLabel(r.faultMs)} ${r.profile}: ${r.group?.join(', ') ?? 'all'}]` + (r.batch ? ` (${fixed(r.batch.machineBusyCores, 1)} of ${res.meta.cores} cores busy, ` +
      `${fixed(r.batch.otherCores, 2)} by other processes)` : '')).join('; ')}.\n\n`;
    const starved = runs.filter(isStarved);
    if (starved.length) {
      starvedAll.push(...starved);
      md += `> **Caution:** ${starved.map((r) => `${r.strategy} (${lengthLabel(r.faultMs)} ${r.profile})`).join(', ')} ran while the machine was busy (load-generator event-loop ` +
        `lag p99 over 50 ms, or over 0.3 cores used by other processes); their figures are less reliable than the rest.\n\n`;
    }
    for (const p of profiles) {
      const panels = (kind) => S.lengths.map((L) => {
        const rs = runs.filter((r) => r.profile === p && r.faultMs === L && CHARTED.includes(r.strategy));
        if (!rs.length) return null;
        const shade = [0, L / 1000, s.name === 'outage' ? 'outage' : 'brownout'];
        return kind === 'load'
          ? lineChart({
            title: `${lengthLabel(L)} ${s.name === 'outage' ? 'outage' : 'brownout'}`,
            xLabel: 's from the fault\'s start', yLabel: 'arrivals / baseline', shade, width: 560, height: 300,
            hLines: [{ y: 1, label: 'baseline' }, { y: 1.5, label: '1.5x' }],
            series: rs.map((r) => ({ name: r.strategy, points: r.series.map((q) => [q.t + 0.5, q.arrivals / r.baselineRate]) })),
          })
          : lineChart({
            title: `${lengthLabel(L)} ${s.name === 'outage' ? 'outage' : 'brownout'}`,
            xLabel: 's from the fault\'s start (calls by start time)', yLabel: 'success ratio', shade, yMax: 1.05, width: 560, height: 300,
            series: rs.map((r) => ({ name: r.strategy, points: r.series.map((q) => [q.t + 0.5, q.success]) })),
          });
      }).filter(Boolean);
      if (!panels('load').length) continue;
      charts[`storm-${s.name}-${p}-load.svg`] = panelChart({ title: `${s.label}, ${p}: server requests per second / baseline (1 s windows)`, panels: panels('load') });
      charts[`storm-${s.name}-${p}-success.svg`] = panelChart({ title: `${s.label}, ${p}: success ratio of the calls started in each second`, panels: panels('success') });
      md += `![${s.name} ${p} load](storm-${s.name}-${p}-load.svg)\n\n![${s.name} ${p} success](storm-${s.name}-${p}-success.svg)\n\n`;
    }
  }

  // the probe load through the 60 s outage
  const probes = S.runs.filter((r) => r.scenario === 'outage' && r.faultMs === 60000 && r.probeLoad).sort((a, b) => a.profile.localeCompare(b.profile) || byStrategy(a, b));
  if (probes.length) {
    md += `### Probe load in the 60 s outage\n\n` +
      `Attempts per second from clients whose breaker was open or half-open, ${fixed(probes[0].probeLoad.from / 1000, 0)} s into the outage to its end, as a share of the ` +
      `baseline (target for stormguard's defaults: <= 0.5). A client probing every 2 s per endpoint sends at most half its steady ` +
      `load; where its calls come less often than the open period, it probes with its next call.\n\n` + mdTable(
      ['profile', 'strategy', 'probe load / baseline', 'probe attempts / s', 'recovery', 'success from fault on'],
      probes.map((r) => [r.profile, r.strategy === 'stormguard' ? '**stormguard**' : r.strategy, fixed(r.probeLoad.share), fixed(r.probeLoad.perSecond, 1), recoveryText(r), pct(r.successFromFault)]),
    ) + '\n\n';
  }

  // the sensitivity table: one default changed at a time
  const sens = sensitivityRows(S);
  if (sens.length) {
    md += `### Sensitivity: one default changed at a time\n\n` +
      `stormguard with the defaults beside the same client with one option changed (all else default), each run in the same batches ` +
      `as the defaults' where the plan put them (10 s faults, steady profile; the \`maxOpenMs\` ones also in the 60 s faults, and ` +
      `\`halfOpenProbes\` in the 60 s page loads).\n\n` + mdTable(
      ['fault', 'profile', 'option', 'value', 'amplification', 'peak', 'recovery', 'success from fault on', 'probe load'],
      sens.map(({ r, option, value }) => [`${r.scenario} ${lengthLabel(r.faultMs)}`, r.profile, option, value, fixed(r.amplification), `${fixed(r.peakRatio)}x`, recoveryText(r), pct(r.successFromFault), probeText(r)]),
    ) + '\n\n';
  }

  const sgRuns = S.runs.filter((r) => r.libStats).sort((a, b) => a.scenario.localeCompare(b.scenario) || a.profile.localeCompare(b.profile) || a.faultMs - b.faultMs || a.strategy.localeCompare(b.strategy));
  if (sgRuns.length) {
    md += `### stormguard's own counters\n\n` +
      `\`stats()\` summed over a run's clients, and its breakers (from the \`breaker\` ` +
      `events): the share of clients with a breaker opened during the fault, the median time from the fault's start to that first ` +
      `opening, the share with a breaker not closed when the fault ended, and the calls started after the fault that an open circuit rejected:\n\n` + mdTable(
      ['fault', 'profile', 'client', 'calls', 'attempts', 'retries', 'budget denied', 'deduped', 'opened in fault', 'first open', 'not closed at fault end', 'rejected after fault', 'errors'],
      sgRuns.map((r) => [`${r.scenario} ${lengthLabel(r.faultMs)}`, r.profile, r.strategy, r.libStats.requests, r.libStats.attempts, r.libStats.retries, r.libStats.budgetDenied, r.libStats.deduped,
        r.breaker ? pct(r.breaker.clientsOpenedInFault, 0) : '—',
        r.breaker?.firstOpenMedianMs != null ? sec(r.breaker.firstOpenMedianMs) : '—',
        r.breaker ? pct(r.breaker.notClosedAtFaultEnd, 0) : '—',
        r.breaker ? String(r.breaker.rejectedAfterFault) : '—',
        Object.entries(r.errors).map(([k, v]) => `${k} ${v}`).join(', ')]),
    ) + '\n\n';
  }
  if (anchors) md += anchors + '\n\n';
  return md;
}

/** The sensitivity rows: the defaults and each variant that changes one of them, per fault, length and profile. */
export function sensitivityRows(S) {
  const out = [];
  const variants = Object.keys(VARIANT_OF);
  for (const sc of S.scenarios.map((x) => x.name)) {
    for (const c of stormCases(S)) {
      const vs = variants.map((v) => stormRow(S, sc, v, c.faultMs, c.profile)).filter(Boolean);
      if (!vs.length) continue;
      const d = stormRow(S, sc, 'stormguard', c.faultMs, c.profile);
      if (d) out.push({ r: d, option: 'defaults', value: '' });
      for (const r of vs) out.push({ r, option: `\`${VARIANT_OF[r.strategy][0]}\``, value: `${VARIANT_OF[r.strategy][2]} (default ${VARIANT_OF[r.strategy][1]})` });
    }
  }
  return out;
}

// The anchors' reference figures for the same model, faults and strategies (Node 20, ky 1.14.3, cockatiel 3.2.1)
const ANCHORS = {
  outage: { none: [1.0, 1.01, 0, 0.667], naive: [4.02, 4.18, 0, 0.667], ky: [2.9, 3.06, 0, 0.696], cockatiel: [0.49, 3.54, 1600, 0.635] },
  brownout: { none: [1.0, 1.01, 300, 0.712], naive: [3.79, 4.11, null, 0.012], ky: [2.46, 3.19, null, 0.072], cockatiel: [0.82, 2.91, 4300, 0.567] },
};

function anchorsSection(S) {
  const rows = [];
  for (const [sc, byStrategy] of Object.entries(ANCHORS)) {
    for (const [st, a] of Object.entries(byStrategy)) {
      const r = stormRow(S, sc, st);
      if (!r) continue;
      const rec = (ms) => (ms === null ? 'never' : sec(ms));
      rows.push([sc, st, `${fixed(r.amplification)} (${fixed(a[0])})`, `${fixed(r.peakRatio)}x (${fixed(a[1])}x)`,
        `${r.recoveryMs === null ? 'never' : sec(r.recoveryMs)} (${rec(a[2])})`, `${pct(r.successFromFault)} (${pct(a[3])})`]);
    }
  }
  if (!rows.length) return '';
  const ky = stormRow(S, 'brownout', 'ky');
  const kyNote = ky && ky.recoveryMs !== null
    ? `\n\nThe one row that differs in kind is ky in the brownout: here it recovers (${sec(ky.recoveryMs)}, ${pct(ky.successFromFault)} ` +
      `success) where the reference figures have it never recovering. With this server's queue of ${S.config.capacity.queue} and ` +
      `${S.config.capacity.c} slots, a full queue waits ${fixed(S.config.capacity.queue / (S.config.capacity.c / S.config.capacity.serviceMs), 0)} ms ` +
      `once capacity is back, less than the ${S.config.capacity.gatewayMs} ms gateway timeout, so no request can expire in the queue after ` +
      `the fault, and ky's at most three attempts per call (the excess answered 503 at once) cannot keep the backend busy with ` +
      `dead work. naive still collapses because its 300 ms timeout is shorter than that queue wait: it abandons requests the ` +
      `backend then serves for nothing, and sends three more. The load generator was not saturated in ky's run (see its CPU and ` +
      `lag above), so the difference does not come from an overloaded client side. Only a queue deeper than gateway timeout x ` +
      `capacity (${fixed(S.config.capacity.gatewayMs / 1000 * S.config.capacity.c / (S.config.capacity.serviceMs / 1000), 0)} requests) ` +
      `should let retries alone keep the backend collapsed after the fault.`
    : '';
  return `### Against the anchors' reference figures

This run's figures, and in brackets the anchors' reference figures for the same ` +
    `strategies and faults:\n\n` + mdTable(['fault', 'strategy', 'amplification', 'peak', 'recovery', 'success'], rows) + kyNote;
}

function memorySection(res) {
  const m = res.memory;
  const mb = (b) => (b === null || b === undefined ? '—' : `${(b / 1048576).toFixed(2)} MB`);
  const rows = [];
  for (const [name, r] of Object.entries(m.runs)) {
    rows.push([name === 'raw' ? 'plain fetch' : 'stormguard (one client)', mb(r.before.heapUsed), mb(r.afterWarmup.heapUsed), mb(r.after.heapUsed),
      mb(r.after.heapUsed - r.afterWarmup.heapUsed), mb(r.before.wasmMemory), mb(r.after.wasmMemory), mb(r.after.rss), `${(m.calls / r.seconds).toFixed(0)}`, String(r.failed)]);
  }
  return `## 5. Memory\n\n${m.calls.toLocaleString('en')} calls (\`GET /status/200\`, unique URLs, 6 at a time) through one client in Node ` +
    `${process.version}, each library in a fresh process started with \`--expose-gc\`; every figure after a forced full GC: before the ` +
    `first call, after ${m.warmup} warm-up calls, and at the end. The wasm memory is the instance's \`memory.buffer.byteLength\` ` +
    `(linear memory only grows, so a leak would show as growth).\n\n` +
    mdTable(['client', 'JS heap before', 'after warm-up', 'at the end', 'growth after warm-up', 'wasm memory before', 'wasm memory at the end', 'RSS at the end', 'calls/s', 'failed'], rows) + '\n\n';
}

/**
 * @param res the run's results
 * @param o.mdPath where RESULTS.md goes; o.chartsDir where the SVGs go; o.chartsRel their path from RESULTS.md
 */
/** A verdict as a matrix cell: the figure, and whether it meets its target. */
const cellText = (v, md) => (v ? (v.met ? `${v.measured} yes` : md ? `**${v.measured} no**` : `${v.measured} NO`) : '—');

export function writeReport(res, { mdPath, chartsDir, chartsRel = '', modelLink = '../tests/server/README.md', proposals = '' }) {
  const charts = {};
  if (res.storm) res.storm = normalizeStorm(res.storm);
  const verdicts = evaluateTargets(res);
  const matrix = res.storm ? targetMatrix(res.storm) : null;
  const meta = res.meta;
  let md = `# stormguard benchmarks\n\n` +
    `Generated by \`npm run bench${meta.quick ? ' -- --quick' : ''}\` (bench/run.mjs) on ${meta.date}: ${meta.cpu}, ${meta.cores} cores, ` +
    `${meta.os}, Node ${meta.node}, Chromium ${meta.chromium ?? '?'}, stormguard ${meta.stormguard} (commit ${meta.commit}${meta.dirty ? ', with uncommitted changes' : ''}), ` +
    `${Object.entries(meta.versions).map(([k, v]) => `${k} ${v}`).join(', ')}. Every figure below was measured in this one run ` +
    `(${meta.seconds.toFixed(0)} s)${meta.quick ? '. **This is a --quick run: fewer calls, fewer clients, shorter phases; the figures only show that the benchmark runs**' : ''}. ` +
    `The raw figures are in \`results/*.json\`.\n\n`;
  if (meta.mixed) md += `> Note: the sections come from different runs (${meta.mixed}).\n\n`;
  const starved = res.storm ? res.storm.runs.filter(isStarved) : [];
  if (res.storm && starved.length > res.storm.runs.length / 4) {
    md += `> **Warning: the storm figures of this run are not trustworthy.** ${starved.length} of its ${res.storm.runs.length} runs ` +
      `ran while the machine was too busy to keep their load generators on time (event-loop lag p99 over 50 ms, or over 0.3 ` +
      `cores used by other processes; section 4 gives the conditions). Timers that fire seconds late fire calls, retries and ` +
      `probes in bunches, which inflates peaks and blurs recovery; the comparisons within a batch (same noise) say more than ` +
      `the absolute figures. Run \`npm run bench -- --only=storm\` again on a quiet machine.\n\n`;
  }
  const other = verdicts.filter((v) => v.area !== 'storm');
  if (other.length) {
    md += `## Targets: size and start-up (issue 19), overhead (issue 7)\n\n` + mdTable(['area', 'target', 'measured', 'met'], other.map((v) => [v.area, v.target, v.measured, v.met ? 'yes' : '**no**'])) + '\n\n';
  }
  if (matrix) {
    md += `## Targets: the storm (issues 15, 26)\n\n` +
      `stormguard with the default options and \`request()\`, at every fault length and both client profiles: outage amplification ` +
      `at or below cockatiel's at the same length and <= 0.55 (page loads at 3 and 10 s: <= 1.0, issue 26); peak 1 s / baseline <= 1.5x; recovery <= 2.0 s after the fault ends; ` +
      `success from the fault on >= none's - 3 points (brownouts: >= none's); probe load in the 60 s outage <= 0.5 of baseline. ` +
      `${matrix.met} of ${matrix.total} met.\n\n` +
      mdTable(matrix.head, matrix.rows.map(([r, ...cells]) => [r, ...cells.map((v) => cellText(v, true))])) + '\n\n';
  }
  if (proposals) md += proposals + '\n\n';
  const s = summary(res);
  md += `## Summary\n\n` + mdTable(s.head, s.rows) + '\n\n';
  if (res.size) md += sizeSection(res, charts);
  if (res.startup) md += startupSection(res, charts);
  if (res.overhead) md += overheadSection(res, charts);
  if (res.storm) md += stormSection(res, charts, anchorsSection(res.storm));
  if (res.memory) md += memorySection(res);
  for (const [name, svg] of Object.entries(charts)) writeFileSync(join(chartsDir, name), svg);
  md = md.replace(/\]\(([\w.-]+\.svg)\)/g, (_, f) => `](${chartsRel}${f})`).replace('](../tests/server/README.md)', `](${modelLink})`);
  writeFileSync(mdPath, md.replace(/\n{3,}/g, '\n\n'));
  const targetTable = matrix
    ? `storm targets (issues 15, 26), stormguard defaults, request(): ${matrix.met} of ${matrix.total} met\n` +
      textTable(matrix.head, matrix.rows.map(([r, ...cells]) => [r, ...cells.map((v) => cellText(v, false))]))
    : null;
  return { verdicts, summary: s, targetTable };
}
