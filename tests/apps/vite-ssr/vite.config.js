import { defineConfig } from 'vite';

// stormguard is bundled into dist/server.js, not left to node_modules.
export default defineConfig({
  ssr: { noExternal: ['stormguard'] },
});
