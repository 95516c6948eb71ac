import { defineConfig } from 'vite';
import vue from '@vitejs/plugin-vue';

// stormguard is excluded from dev-mode pre-bundling so its
// `new URL('stormguard_bg.wasm', import.meta.url)` keeps pointing at the real
// file (vite build handles it either way).
export default defineConfig({
  plugins: [vue()],
  optimizeDeps: { exclude: ['stormguard'] },
  build: { sourcemap: false },
});
