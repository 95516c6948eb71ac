// Headless Chromium (Debian's, through playwright-core, with the flags this
// machine needs: ../tests/e2e/browser.mjs) and the fault server serving the
// repository as its static root, in a process of its own.
import { join } from 'node:path';
import { launchChromium } from '../tests/e2e/browser.mjs';
import { ask, benchDir, forkNode, root } from './lib.mjs';

export { launchChromium };

/**
 * The fault server with the repository as static root (pages, bench/.build, pkg/) on loopback;
 * `options` are more of startServer's (staticCacheControl).
 */
export async function startSite(options = {}) {
  const { child, ready } = await forkNode(join(benchDir, 'server-proc.mjs'), [JSON.stringify({ staticRoot: root, ...options })]);
  return {
    url: ready.url,
    close: async () => {
      await ask(child, 'close').catch(() => {});
    },
  };
}

/**
 * Opens `url` in `page` cross-origin isolated (COOP + COEP added to the document's response by
 * interception, which is removed again once loaded), so performance.now() has 5 µs resolution
 * instead of 100 µs. Same-origin subresources need nothing more.
 */
export async function gotoIsolated(page, url) {
  const handler = async (route) => {
    const res = await route.fetch();
    await route.fulfill({
      response: res,
      headers: { ...res.headers(), 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' },
    });
  };
  const pattern = url.split('?')[0];
  await page.route(pattern, handler);
  await page.goto(url);
  await page.unroute(pattern, handler);
  return page.evaluate(() => globalThis.crossOriginIsolated === true);
}

/**
 * The fault server, Chromium and the libraries' page (`bench/pages/<page>.html`, cross-origin
 * isolated; `query` its search string) loaded and ready: what the per-call benchmarks share. `close()`
 * ends all of it.
 */
export async function openBenchPage(page, label, query = '') {
  const site = await startSite();
  const browser = await launchChromium();
  try {
    const tab = await browser.newPage();
    const errors = [];
    tab.on('pageerror', (e) => errors.push(e.message));
    const isolated = await gotoIsolated(tab, `${site.url}/bench/pages/${page}.html${query}`);
    await tab.waitForFunction(() => window.ready === true, null, { timeout: 20000 }).catch(() => {
      throw new Error(`${label} page did not load: ${errors.join('; ')}`);
    });
    return { site, page: tab, isolated, close: async () => { await browser.close(); await site.close(); } };
  } catch (e) {
    await browser.close();
    await site.close();
    throw e;
  }
}
