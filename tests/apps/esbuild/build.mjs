// esbuild does not rewrite new URL('./stormguard_bg.wasm', import.meta.url):
// the `file` loader copies the wasm into dist/ and gives its URL, which the
// app hands to createClient({ wasm }) (the README's esbuild example).
import * as esbuild from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';

mkdirSync('dist', { recursive: true });
await esbuild.build({
  entryPoints: ['src/main.js'],
  bundle: true,
  format: 'esm',
  minify: true,
  outdir: 'dist',
  loader: { '.wasm': 'file' },
  logLevel: 'warning',
});
copyFileSync('index.html', 'dist/index.html');
