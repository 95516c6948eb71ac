import { defineConfig } from 'vite';

// No React plugin: esbuild's automatic JSX runtime is all this app needs
// (and keeps the app's install small). stormguard is excluded from dev-mode
// pre-bundling so its `new URL('stormguard_bg.wasm', import.meta.url)` keeps
// pointing at the real file (vite build handles it either way).
// README "Preloading the wasm": the built index.html preloads the wasm, whose
// name Vite hashes (tests/e2e/apps.test.mjs checks this function is README's).
function preloadStormguardWasm() {
  let base = '/';
  return {
    name: 'preload-stormguard-wasm',
    apply: 'build',
    configResolved(config) {
      base = config.base;
    },
    transformIndexHtml: {
      order: 'post',
      handler: (html, { bundle }) => Object.keys(bundle ?? {})
        .filter((file) => /(^|\/)stormguard_bg-[\w-]+\.wasm$/.test(file))
        .map((file) => ({
          tag: 'link',
          attrs: { rel: 'preload', href: base + file, as: 'fetch', type: 'application/wasm', crossorigin: true },
          injectTo: 'head',
        })),
    },
  };
}

export default defineConfig({
  plugins: [preloadStormguardWasm()],
  esbuild: { jsx: 'automatic' },
  optimizeDeps: { exclude: ['stormguard'] },
  build: { sourcemap: false },
});
