// Node >= 20 entry: the same wasm, instantiated from disk once per realm.
import { readFile } from 'node:fs/promises';
import { initSync } from './stormguard.js';
import * as wasm from './stormguard.js';
import { makeCreateClient } from './core.js';

export {
  StormguardError, TimeoutError, AbortError, NetworkError, HttpError,
  CircuitOpenError, QueueFullError, ParseError, OptionsError, isStormguardError,
} from './core.js';

export const createClient = makeCreateClient(async () => {
  const bytes = await readFile(new URL('./stormguard_bg.wasm', import.meta.url));
  initSync({ module: bytes });
  return wasm;
});
