// Start-up in Chromium: from import() of the library's bundle to a client
// ready for its first call, over cold page loads (a fresh browser context,
// so a fresh cache, for every load; the server sends no-store anyway).
// The libraries' loads alternate, so machine noise hits them alike.
import { launchChromium, startSite } from './browser.mjs';
import { summarize } from './lib.mjs';

export const STARTUP_LIBS = ['stormguard', 'ky', 'cockatiel', 'ofetch', 'axios'];

export async function runStartup({ quick, libs = STARTUP_LIBS, log = console.log } = {}) {
  const loads = quick ? 5 : 20;
  const site = await startSite();
  const browser = await launchChromium();
  const samples = Object.fromEntries(libs.map((l) => [l, []]));
  try {
    log(`[startup] ${loads} cold page loads per library, alternating`);
    for (let i = 0; i < loads; i++) {
      for (const lib of libs) {
        const context = await browser.newContext();
        const page = await context.newPage();
        await page.goto(`${site.url}/bench/pages/startup.html?lib=${lib}`);
        await page.waitForFunction(() => window.result !== undefined, null, { timeout: 20000 });
        const r = await page.evaluate(() => window.result);
        await context.close();
        if (r.error) throw new Error(`start-up of ${lib}: ${r.error}`);
        samples[lib].push(r);
      }
    }
  } finally {
    await browser.close();
    await site.close();
  }
  const result = { loads, libs: {} };
  for (const lib of libs) {
    const s = samples[lib];
    result.libs[lib] = {
      importMs: summarize(s.map((r) => r.importMs)),
      readyMs: summarize(s.map((r) => r.readyMs)),
      navToReadyMs: summarize(s.map((r) => r.navToReadyMs)),
    };
    log(`[startup]   ${lib.padEnd(10)} import -> ready median ${result.libs[lib].readyMs.median.toFixed(1)} ms ` +
      `(import ${result.libs[lib].importMs.median.toFixed(1)} ms)`);
  }
  return result;
}
