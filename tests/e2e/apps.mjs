// Shared by the tests of the real apps in tests/apps (apps.test.mjs,
// tanstack.test.mjs): the packed package, each app copied to a temporary
// folder and installed from its committed package-lock.json plus that
// tarball, as a user would, and the fault server's log.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { root } from './browser.mjs';

export const run = promisify(execFile);

// Under `npm test`, npm exports its resolved config as npm_config_* (local_prefix
// among them, the workspace root): the app installs must not inherit that.
const KEEP = /^npm_config_(cache|userconfig|globalconfig|registry|cafile|proxy|https_proxy|noproxy|strict_ssl)$/i;
export const childEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) || KEEP.test(k)));
childEnv.npm_config_update_notifier = 'false';
// Readiness is read from the children's output: keep it free of colour codes (a CI runner may set
// FORCE_COLOR, and Vite then splits "127.0.0.1:" from the port with an escape).
delete childEnv.FORCE_COLOR;
childEnv.NO_COLOR = '1';

export async function sh(cmd, args, cwd) {
  try {
    return await run(cmd, args, { cwd, maxBuffer: 64 << 20, env: childEnv });
  } catch (e) {
    throw new Error(`${cmd} ${args.join(' ')} failed in ${cwd}:\n${e.stdout}\n${e.stderr}`);
  }
}

/** Packs pkg/ into `work`; returns the tarball's path. */
export async function packTarball(work) {
  await sh('npm', ['pack', './pkg', '--pack-destination', work, '--silent'], root);
  return join(work, readdirSync(work).find((f) => f.endsWith('.tgz')));
}

/**
 * The README's code block (```js, ```ts, ```tsx or ```vue) whose first line
 * is `// name` (`<!-- name -->` in a Vue file), as written: how the app
 * tests take a recipe's code from the README (`readme`: the README's text,
 * the repository's or the shipped one).
 */
export function readmeBlock(readme, name) {
  const line = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const m = new RegExp(`\`\`\`(?:js|tsx?|vue)\\n((?:// ${line}|<!-- ${line} -->)\\n[\\s\\S]*?)\`\`\``).exec(readme);
  assert.ok(m, `README has a code block starting "// ${name}"`);
  return m[1];
}

/** Copies one app to `work` and installs it with the packed package; returns its folder. */
export async function installApp(name, work, tarball) {
  const dir = join(work, name);
  cpSync(join(root, 'tests/apps', name), dir, {
    recursive: true,
    filter: (src) => !/[\\/](node_modules|dist|\.next)$/.test(src),
  });
  const quiet = ['--no-audit', '--no-fund', '--loglevel=error'];
  await sh('npm', ['ci', '--prefer-offline', ...quiet], dir);
  await sh('npm', ['install', '--no-save', '--prefer-offline', ...quiet, tarball], dir);
  return dir;
}

/** Builds an installed Vite app in `dir`; returns the dist folder. */
export async function viteBuild(dir) {
  await sh(process.execPath, [join(dir, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'warn'], dir);
  const dist = join(dir, 'dist');
  assert.ok(readdirSync(join(dist, 'assets')).some((f) => f.endsWith('.wasm')), 'vite emitted the wasm as an asset');
  return dist;
}

/** Uncaught exceptions and console errors, less the browser's own line for each failed HTTP status. */
export function watchPage(page) {
  const errors = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    if (/^Failed to load resource: the server responded with a status of 503/.test(m.text())) return;
    errors.push(`console: ${m.text()}`);
  });
  return errors;
}

/** The fault server at `base`: its log of an id, and waits on it. */
export function faultLog(base) {
  const log = async (id) => (await (await fetch(`${base}/_log?id=${id}`)).json()).filter((e) => !e.preflight);

  /** Waits until the fault server has logged a request for `id` and returns it. */
  async function arrived(id, timeoutMs = 5000) {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const entries = await log(id);
      if (entries.length > 0) return entries;
      if (Date.now() > end) throw new Error(`no request for ${id} reached the fault server`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** Waits until the single logged request for `id` was closed by the client; returns [entry, all entries]. */
  async function closedByClient(id, timeoutMs = 2000) {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const entries = await log(id);
      if (entries[0]?.closedAt != null) return [entries[0], entries];
      if (Date.now() > end) throw new Error(`the request for ${id} was not aborted: ${JSON.stringify(entries)}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  return { log, arrived, closedByClient };
}
