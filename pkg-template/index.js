// Browser, worker and bundler entry: the wasm is fetched from beside this
// file (`new URL('stormguard_bg.wasm', import.meta.url)`, which Vite and
// webpack 5 resolve at build time) and instantiated once per realm.
import init, * as wasm from './stormguard.js';
import { makeCreateClient } from './core.js';

export {
  StormguardError, TimeoutError, AbortError, NetworkError, HttpError,
  CircuitOpenError, QueueFullError, ParseError, OptionsError, isStormguardError,
} from './core.js';

export const createClient = makeCreateClient(async () => {
  await init();
  return wasm;
});
