#!/usr/bin/env node
// npm run bench [-- --quick] [-- --only=size,startup,overhead,storm,blip,memory,hedge,ratelimit,firstload] [-- --report-only]
//   storm filters, for short runs while developing (they write to results/dev/):
//   [-- --scenarios=outage,brownout] [-- --lengths=3,10,60] [-- --profiles=steady,page-load] [-- --strategies=none,stormguard]
//   (--strategies may name a variant the plan does not run there: it runs in extra batches; see storm.mjs filterPlan)
//   [-- --pkg=before=/tmp/pkg-before] start-up and overhead of another build (a pkg/ folder) beside this one (results/dev/)
//
// Runs every benchmark side by side with raw fetch, ky and cockatiel (and
// ofetch/axios for size and start-up), writes results/*.json, RESULTS.md with
// SVG charts, and prints a summary table. The full run writes bench/RESULTS.md
// and bench/results/; --quick (CI: fewer calls, fewer clients, shorter phases)
// writes bench/results/quick/ so it never replaces the full figures.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { benchDir, resultsDir, root } from './lib.mjs';
import { measureSizes, pkgsFromArgs, twiggyBreakdown } from './size.mjs';
import { runStartup } from './startup.mjs';
import { runOverhead } from './overhead.mjs';
import { runStorm } from './storm.mjs';
import { runMemory } from './memory.mjs';
import { hedgeSection, runHedge } from './hedge.mjs';
import { rateLimitSection, runRateLimit } from './ratelimit.mjs';
import { blipSection, runBlip } from './blip.mjs';
import { firstloadSection, runFirstload } from './firstload.mjs';
import { writeReport } from './report.mjs';
import { proposalsSection } from './proposals.mjs';

const SECTIONS = ['size', 'startup', 'overhead', 'storm', 'blip', 'memory', 'hedge', 'ratelimit', 'firstload'];
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const onlyArg = args.find((a) => a.startsWith('--only='));
// --report-only: rewrite RESULTS.md from the last results/*.json without measuring anything
const only = args.includes('--report-only') ? [] : onlyArg ? onlyArg.slice('--only='.length).split(',') : SECTIONS;
for (const s of only) if (!SECTIONS.includes(s)) throw new Error(`unknown section ${s}; sections: ${SECTIONS.join(', ')}`);

const listArg = (name) => {
  const a = args.find((x) => x.startsWith(`--${name}=`));
  return a ? a.slice(name.length + 3).split(',').filter(Boolean) : undefined;
};
const stormFilter = {
  scenarios: listArg('scenarios'),
  lengths: listArg('lengths')?.map((s) => Number(s) * 1000),
  profiles: listArg('profiles'),
  strategies: listArg('strategies'),
};
// --pkg=before=/tmp/pkg-before: another build's start-up and overhead rows beside this checkout's
// (stormguard@before), interleaved in one run, with their ratios printed (startup.mjs, overhead.mjs)
const pkgs = pkgsFromArgs(args);
const filtered = Object.values(stormFilter).some(Boolean) || pkgs.length > 0;
// --scale=0.4: the storm with fewer clients and a proportionally smaller backend (same load, same timings);
// by default the full run scales to the machine (storm.mjs, FULL_SCALE)
const scaleArg = args.find((a) => a.startsWith('--scale='));
const stormScale = scaleArg ? Number(scaleArg.slice('--scale='.length)) : null;
if (stormScale !== null && !(stormScale > 0 && stormScale <= 1)) throw new Error('--scale must be in (0, 1]');
// a filtered run never replaces the full run's figures
const outDir = filtered ? join(resultsDir, 'dev') : quick ? join(resultsDir, 'quick') : resultsDir;
const partial = quick || filtered;
mkdirSync(outDir, { recursive: true });
const t0 = performance.now();
const log = (...a) => console.log(...a);

function tryRun(cmd, argv) {
  try {
    return execFileSync(cmd, argv, { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
  } catch {
    return null;
  }
}
const version = (name) => JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version;

if (!existsSync(join(root, 'pkg/node.js')) || !existsSync(join(root, 'pkg/stormguard_bg.wasm'))) {
  throw new Error('pkg/ is not built: run `node scripts/build.mjs` (npm run bench does it first)');
}

const meta = {
  quick,
  date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
  cpu: os.cpus()[0]?.model ?? 'unknown CPU',
  cores: os.cpus().length,
  os: existsSync('/etc/debian_version') ? `Debian ${readFileSync('/etc/debian_version', 'utf8').trim()}` : `${os.type()} ${os.release()}`,
  node: process.version,
  chromium: tryRun('/usr/bin/chromium', ['--version'])?.replace(/^Chromium\s+/, '').split(' ')[0] ?? null,
  stormguard: JSON.parse(readFileSync(join(root, 'pkg/package.json'), 'utf8')).version,
  commit: tryRun('git', ['rev-parse', '--short', 'HEAD']) ?? 'unknown',
  dirty: Boolean(tryRun('git', ['status', '--porcelain', '--', 'src', 'pkg-template', 'Cargo.toml'])),
  versions: { ky: version('ky'), cockatiel: version('cockatiel'), ofetch: version('ofetch'), axios: version('axios'), esbuild: version('esbuild') },
  sections: {},
  stormFilter: filtered ? stormFilter : undefined,
  stormScale: stormScale ?? undefined,
};

const res = { meta };
const save = (name, value) => {
  res[name] = value;
  writeFileSync(join(outDir, `${name}.json`), JSON.stringify(value, null, 1) + '\n');
};
const timed = async (name, fn) => {
  const t = performance.now();
  const value = await fn();
  meta.sections[name] = { date: meta.date, seconds: (performance.now() - t) / 1000 };
  log(`[bench] ${name} took ${((performance.now() - t) / 1000).toFixed(1)} s`);
  return value;
};

log(`[bench] ${quick ? 'quick' : 'full'} run: ${only.join(', ')} -> ${outDir.replace(root + '/', '')}`);
if (only.includes('size')) {
  save('size', await timed('size', () => measureSizes({ log })));
  save('twiggy', await timed('twiggy', () => twiggyBreakdown({ quick, log })));
}
if (only.includes('startup')) save('startup', await timed('startup', () => runStartup({ quick, pkgs, log })));
if (only.includes('overhead')) save('overhead', await timed('overhead', () => runOverhead({ quick, pkgs, log })));
if (only.includes('storm')) {
  const overrides = stormScale === null ? {} : {
    clientsScale: stormScale,
    capacity: { c: Math.round(20 * stormScale), serviceMs: 50, gatewayMs: 1000, queue: Math.round(200 * stormScale) },
  };
  save('storm', await timed('storm', () => runStorm({ quick, scenarios: stormFilter.scenarios, filter: stormFilter, overrides, log })));
}
if (only.includes('blip')) save('blip', await timed('blip', () => runBlip({ quick, log })));
if (only.includes('memory')) save('memory', await timed('memory', () => runMemory({ quick, log })));
if (only.includes('hedge')) save('hedge', await timed('hedge', () => runHedge({ quick, log })));
if (only.includes('ratelimit')) save('ratelimit', await timed('ratelimit', () => runRateLimit({ quick, log })));
if (only.includes('firstload')) save('firstload', await timed('firstload', () => runFirstload({ quick, log })));

// sections not run this time come from the previous run's JSON, and the report says so
const loaded = [];
for (const f of existsSync(outDir) ? readdirSync(outDir) : []) {
  const name = f.replace(/\.json$/, '');
  if (!f.endsWith('.json') || name === 'meta' || res[name] || !['size', 'twiggy', ...SECTIONS].includes(name)) continue;
  res[name] = JSON.parse(readFileSync(join(outDir, f), 'utf8'));
  loaded.push(name);
}
if (only.length === 0 && existsSync(join(outDir, 'meta.json'))) {
  Object.assign(meta, JSON.parse(readFileSync(join(outDir, 'meta.json'), 'utf8')));
} else {
  if (loaded.length) meta.mixed = `${loaded.join(', ')} from an earlier run`;
  meta.seconds = (performance.now() - t0) / 1000;
  writeFileSync(join(outDir, 'meta.json'), JSON.stringify(meta, null, 1) + '\n');
}

const mdPath = partial ? join(outDir, 'RESULTS.md') : join(benchDir, 'RESULTS.md');
const { verdicts, summary, targetTable } = writeReport(res, {
  mdPath,
  chartsDir: outDir,
  chartsRel: partial ? '' : 'results/',
  modelLink: partial ? '../../../tests/server/README.md' : '../tests/server/README.md',
  proposals: [proposalsSection(res), blipSection(res), hedgeSection(res), rateLimitSection(res), firstloadSection(res)].filter(Boolean).join('\n\n'),
});

log('\n' + summary.text + '\n');
if (targetTable) log(targetTable + '\n');
// the storm's verdicts are all in the table above; its misses are listed again here
for (const v of verdicts) if (v.area !== 'storm' || !v.met) log(`${v.met ? 'met    ' : 'NOT MET'}  ${v.target}: ${v.measured}`);
log(`\n[bench] ${quick ? 'quick' : filtered ? 'filtered' : 'full'} run took ${meta.seconds.toFixed(0)} s; report: ${mdPath.replace(root + '/', '')}`);
