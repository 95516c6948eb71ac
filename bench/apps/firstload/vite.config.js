import { resolve } from 'node:path';
import { defineConfig } from 'vite';

// One app, several builds: FIRSTLOAD_BUILD (fetch, ky, axios, stormguard) picks
// src/http/<build>.ts as the module '@http'; each build is served under
// /<build>/ (bench/firstload.mjs). No React plugin: esbuild compiles the TSX.
// stormguard-preload: stormguard with the README's preload plugin ("Preloading
// the wasm"), as written there.
const build = process.env.FIRSTLOAD_BUILD;
if (!build) throw new Error('FIRSTLOAD_BUILD is not set');
const client = build === 'stormguard-preload' ? 'stormguard' : build;

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
  base: `/${build}/`,
  plugins: build === 'stormguard-preload' ? [preloadStormguardWasm()] : [],
  esbuild: { jsx: 'automatic' },
  resolve: { alias: { '@http': resolve(import.meta.dirname, `src/http/${client}.ts`) } },
  build: {
    outDir: `dist/${build}`,
    emptyOutDir: true,
    sourcemap: false,
    rollupOptions: {
      // TanStack's "use client" directives, which a bundle ignores.
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
      },
    },
  },
});
