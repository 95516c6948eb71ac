import { defineConfig } from 'vite';

// No React plugin: esbuild's automatic JSX runtime compiles the TSX (Vite
// strips the types; `tsc --noEmit` checks them). stormguard is excluded from
// dev-mode pre-bundling for the Vite 7 dev server (README, "Vite + React").
export default defineConfig({
  esbuild: { jsx: 'automatic' },
  optimizeDeps: { exclude: ['stormguard'] },
  build: {
    sourcemap: false,
    rollupOptions: {
      // TanStack's "use client" directives, which a bundle ignores (@vitejs/plugin-react hides the same warning).
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
      },
    },
  },
});
