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
import { fileURLToPath } from 'node:url';
import { Client, finish, imports } from './stormguard.js';
import { OptionsError, checkWasmBytes, fetchWasm, loadWasm, makeCreateClient } from './core.js';

export {
  StormguardError, TimeoutError, AbortError, NetworkError, HttpError,
  CircuitOpenError, QueueFullError, ParseError, OptionsError, isStormguardError,
} from './core.js';

const FILE = 'stormguard_bg.wasm';

/** A file's bytes, checked; OptionsError naming the path and the fix when it is missing. */
async function readWasm(path, signal) {
  let bytes;
  try {
    bytes = await readFile(path, { signal });
  } catch (e) {
    throw new OptionsError(
      `stormguard: could not read the wasm module ${path} (${e.code ?? e.message}). A bundler may have moved ` +
        'this file without the .wasm beside it. Pass the module yourself, ' +
        "createClient({ wasm: readFileSync('node_modules/stormguard/stormguard_bg.wasm') }) " +
        '(README, "Frameworks and tools")',
      { option: 'wasm', cause: e },
    );
  }
  return checkWasmBytes(bytes, path);
}

/** What core.js instantiates the module with (the glue's initSync is left out: see scripts/build.mjs). */
const glue = { Client, finish, imports };

export const createClient = makeCreateClient(async (source, signal) => {
  await loadWasm(glue, source, async (value) => {
    if (value === undefined) {
      const where = fileURLToPath(new URL(FILE, String(import.meta.url)));
      return { input: await readWasm(where, signal), where };
    }
    // A URL with a scheme (file:, http:, https:, data:), else a file path.
    const url = /^[a-z][a-z0-9+.-]+:/i.test(value) && URL.canParse(value) ? new URL(value) : null;
    if (url && url.protocol !== 'file:') return { input: await fetchWasm(url, { signal }), where: url.href };
    const where = url ? fileURLToPath(url) : value;
    return { input: await readWasm(where, signal), where };
  });
  return glue;
});
