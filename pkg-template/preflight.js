// Imported first by the browser entry: the wasm-bindgen glue creates a
// TextDecoder and a TextEncoder as it is evaluated, so a host without them
// (Jest's jsdom environment in ESM mode) would fail with a bare
// "ReferenceError: TextDecoder is not defined". Say which global and the fix.
const missing = ['TextDecoder', 'TextEncoder'].filter((n) => typeof globalThis[n] === 'undefined');
if (missing.length > 0) {
  throw new ReferenceError(
    `stormguard: this environment lacks the global ${missing.join(' and ')}, which stormguard needs. ` +
      "Jest's jsdom environment does not provide them: set testEnvironment to 'jest-fixed-jsdom' " +
      "(npm i -D jest-fixed-jsdom), or to 'node' for tests without a DOM.",
  );
}
