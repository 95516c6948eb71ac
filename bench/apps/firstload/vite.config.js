import { resolve } from 'node:path';
import { defineConfig } from 'vite';

// One app, four builds: FIRSTLOAD_BUILD (fetch, ky, axios, stormguard) picks
// src/http/<build>.ts as the module '@http'; each build is served under
// /<build>/ (bench/firstload.mjs). No React plugin: esbuild compiles the TSX.
const build = process.env.FIRSTLOAD_BUILD;
if (!build) throw new Error('FIRSTLOAD_BUILD is not set');

export default defineConfig({
  base: `/${build}/`,
  esbuild: { jsx: 'automatic' },
  resolve: { alias: { '@http': resolve(import.meta.dirname, `src/http/${build}.ts`) } },
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
