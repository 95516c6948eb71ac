// Browser bundles of the npm libraries the demo compares stormguard with
// (ky and cockatiel, as installed by `npm ci`), written as ES modules to
// www/vendor/ (gitignored). Used by `npm start` (scripts/start.mjs) and by
// tests/e2e/demo.test.mjs, so a fresh clone needs nothing committed.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const vendorDir = join(root, 'www/vendor');

const ENTRIES = {
  ky: `export { default } from 'ky';`,
  cockatiel: `export * from 'cockatiel';`,
};

/** The installed version of an npm package, from node_modules. */
export function installedVersion(name) {
  return JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version;
}

/** Writes www/vendor/ky.js and www/vendor/cockatiel.js; returns { name: version }. */
export async function bundleVendor({ quiet = true } = {}) {
  const esbuild = await import('esbuild');
  mkdirSync(vendorDir, { recursive: true });
  const versions = {};
  for (const [name, contents] of Object.entries(ENTRIES)) {
    versions[name] = installedVersion(name);
    const out = await esbuild.build({
      stdin: { contents, resolveDir: root, sourcefile: `${name}-entry.mjs`, loader: 'js' },
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      write: false,
      banner: { js: `// ${name} ${versions[name]} from npm, bundled by scripts/vendor.mjs (esbuild)` },
      logLevel: quiet ? 'silent' : 'warning',
    });
    const code = Buffer.from(out.outputFiles[0].contents);
    const file = join(vendorDir, `${name}.js`);
    if (existsSync(file) && readFileSync(file).equals(code)) continue;
    // write then rename: a page loading the file meanwhile (another demo server) never reads half of it
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, code);
    renameSync(tmp, file);
  }
  return versions;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const v = await bundleVendor({ quiet: false });
  console.log(`www/vendor/: ${Object.entries(v).map(([k, x]) => `${k} ${x}`).join(', ')}`);
}
