// The dev-server set-up users start from: vite.config.js without
// optimizeDeps.exclude. Under Vite 7 the wasm URL then points into
// node_modules/.vite/deps/, which the dev server answers with index.html:
// tests/e2e/apps.test.mjs checks that the page still shows its fallback and
// that the error names the URL and the fix.
import { defineConfig } from 'vite';

export default defineConfig({ esbuild: { jsx: 'automatic' } });
