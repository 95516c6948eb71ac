// Start-up in Chromium: from import() of the library's bundle to a client
// ready for its first call, cold and warm. Cold: a fresh browser context (a
// fresh HTTP cache, no V8 code cache) for every first load. Warm: the same
// page loaded again in that context, so the bundle (and stormguard's wasm)
// come from the HTTP cache and V8 may use what it cached of their code (the
// static files are served cacheable here). The libraries' loads alternate,
// so machine noise hits them alike. `stormguard+preload` is stormguard on a
// page whose HTML preloads the wasm (README, "Preloading the wasm").
import { launchChromium, startSite } from './browser.mjs';
import { summarize } from './lib.mjs';
import { buildBundles } from './size.mjs';

export const STARTUP_LIBS = ['stormguard', 'stormguard+preload', 'ky', 'cockatiel', 'ofetch', 'axios'];

/** One load of `page` (already in its context): the page's times, or a thrown error. */
async function load(page, url, lib) {
  await page.goto(url);
  await page.waitForFunction(() => window.result !== undefined, null, { timeout: 20000 });
  const r = await page.evaluate(() => window.result);
  if (r.error) throw new Error(`start-up of ${lib}: ${r.error}`);
  return r;
}

export async function runStartup({ quick, libs = STARTUP_LIBS, log = console.log } = {}) {
  const loads = quick ? 5 : 20;
  await buildBundles(); // the bundles of the size section, from the pkg/ of now
  const site = await startSite({ staticCacheControl: 'public, max-age=3600' });
  const browser = await launchChromium();
  const samples = Object.fromEntries(libs.map((l) => [l, { cold: [], warm: [] }]));
  try {
    log(`[startup] ${loads} cold + warm page loads per library, alternating`);
    for (let i = 0; i < loads; i++) {
      for (const lib of libs) {
        const [name, preload] = lib.split('+');
        const url = `${site.url}/bench/pages/startup.html?lib=${name}${preload ? '&preload' : ''}`;
        const context = await browser.newContext();
        try {
          const page = await context.newPage();
          samples[lib].cold.push(await load(page, url, lib));
          samples[lib].warm.push(await load(page, url, lib));
        } finally {
          await context.close();
        }
      }
    }
  } finally {
    await browser.close();
    await site.close();
  }
  const result = { loads, libs: {} };
  const ms = (s) => `${s.median.toFixed(1)} ms`;
  log('[startup]   library              import -> ready, median: cold    warm   (import alone: cold    warm)');
  for (const lib of libs) {
    const { cold, warm } = samples[lib];
    const l = {
      importMs: summarize(cold.map((r) => r.importMs)),
      readyMs: summarize(cold.map((r) => r.readyMs)),
      navToReadyMs: summarize(cold.map((r) => r.navToReadyMs)),
      warmImportMs: summarize(warm.map((r) => r.importMs)),
      warmReadyMs: summarize(warm.map((r) => r.readyMs)),
      warmNavToReadyMs: summarize(warm.map((r) => r.navToReadyMs)),
    };
    result.libs[lib] = l;
    log(`[startup]   ${lib.padEnd(20)} ${ms(l.readyMs).padStart(30)} ${ms(l.warmReadyMs).padStart(9)}` +
      `  ${ms(l.importMs).padStart(20)} ${ms(l.warmImportMs).padStart(9)}`);
  }
  return result;
}
