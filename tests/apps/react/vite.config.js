import { defineConfig } from 'vite';

// No React plugin: esbuild's automatic JSX runtime is all this app needs
// (and keeps the app's install small). stormguard is excluded from dev-mode
// pre-bundling so its `new URL('stormguard_bg.wasm', import.meta.url)` keeps
// pointing at the real file (vite build handles it either way).
export default defineConfig({
  esbuild: { jsx: 'automatic' },
  optimizeDeps: { exclude: ['stormguard'] },
  build: { sourcemap: false },
});
