// Node >= 20 entry (ESM; node.cjs is this file bundled as CommonJS): the
// same wasm as the browser entry, read from disk once per realm, or from what
// the first createClient's `wasm` option names.
//
// The default file's URL is built from a variable, not the literal
// `new URL('./stormguard_bg.wasm', import.meta.url)`: server bundlers
// (Next.js's webpack and Turbopack) rewrite that literal into an asset URL
// object that fs.readFile rejects, while they keep `import.meta.url` the
// module's own file URL, from which the file beside it is found.
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, UserFnFlag, finish, imports } from './stormguard.js';
import { OptionsError, checkWasmBytes, fetchWasm, loadWasm, makeCreateClient } from './core.js';

export {
  StormguardError, TimeoutError, AbortError, NetworkError, HttpError,
  CircuitOpenError, QueueFullError, ParseError, OptionsError, isStormguardError,
} from './core.js';

const FILE = 'stormguard_bg.wasm';

/** The folder of this file (or of the bundle it is in). */
const here = () => dirname(fileURLToPath(String(import.meta.url)));

/**
 * Why `path` could not be read, and the fix for this runtime: Deno without read access to the
 * package is told which flag gives it; a file missing beside a bundle (Bun build, Vite SSR with
 * ssr.noExternal, Next.js moving it) is told to ship the .wasm beside it or pass the module.
 */
function readFix(e, path) {
  if (globalThis.Deno && /^(NotCapable|PermissionDenied)$/.test(e?.name ?? '')) {
    return `Deno needs read access to it: run with --allow-read=${path} (or --allow-read), or import the ` +
      "module, which needs none: import source wasm from 'stormguard/stormguard_bg.wasm'; " +
      'createClient({ wasm }) (README, "Bun, Deno, Cloudflare Workers and bundled servers")';
  }
  // Not readFileSync('node_modules/...'): that path is read from the current directory, which a
  // bundle run from another folder does not share (tests/e2e/apps.test.mjs, vite-ssr).
  return 'A bundler may have moved this file without the .wasm beside it: copy stormguard_bg.wasm beside the ' +
    "bundle, or give its path, createClient({ wasm: '/srv/app/stormguard_bg.wasm' }) (a relative path is " +
    "read from the bundle's folder, never the current directory) " +
    '(README, "Bun, Deno, Cloudflare Workers and bundled servers")';
}

/** A file's bytes, checked; OptionsError naming the path and the fix when it cannot be read. */
async function readWasm(path, signal) {
  let bytes;
  try {
    bytes = await readFile(path, { signal });
  } catch (e) {
    throw new OptionsError(
      `stormguard: could not read the wasm module ${path} (${e.code ?? e.name ?? e.message}). ${readFix(e, path)}`,
      { option: 'wasm', cause: e },
    );
  }
  return checkWasmBytes(bytes, path);
}

/** What core.js instantiates the module with (the glue's initSync is left out: see scripts/build.mjs). */
const glue = { Client, UserFnFlag, finish, imports };

export const { createClient, createClientSync } = makeCreateClient(async (source, signal) => {
  await loadWasm(glue, source, async (value) => {
    if (value === undefined) {
      const where = join(here(), FILE);
      return { input: await readWasm(where, signal), where };
    }
    // A URL with a scheme (file:, http:, https:, data:), else a file path: an absolute one as it
    // is, a relative one against the package (the folder of this file, or of the bundle it is
    // in), never the current directory, which a bundle run from elsewhere does not share.
    const url = /^[a-z][a-z0-9+.-]+:/i.test(value) && URL.canParse(value) ? new URL(value) : null;
    if (url && url.protocol !== 'file:') return { input: await fetchWasm(url, { signal }), where: url.href };
    const where = url ? fileURLToPath(url) : isAbsolute(value) ? value : join(here(), value);
    return { input: await readWasm(where, signal), where };
  });
  return glue;
});
