#!/usr/bin/env node
// The npm page, pkg/README.md: the repository's README.md without the parts
// only a contributor needs (set-up, benchmarks, layout, running tests, words
// about files outside the tarball), which README.md fences with lines
// `<!-- repo-only -->` ... `<!-- /repo-only -->` (invisible on a rendered page).
//
// One copy of the user guide: the README that contributors edit, and that
// tests/e2e/readme.test.mjs checks against the code, is what npm shows.
// scripts/build.mjs writes it with the rest of pkg/; after editing README.md,
// `node scripts/npm-readme.mjs` rewrites it alone (no wasm build), and
// tests/e2e/npm-readme.test.mjs checks it.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** README.md's text as npm shows it; throws on unpaired markers. */
export function npmReadme(text) {
  const out = [];
  let hidden = false;
  text.split('\n').forEach((line, i) => {
    const marker = /^<!-- (\/?)repo-only -->$/.exec(line.trim());
    if (!marker) {
      if (!hidden) out.push(line);
      return;
    }
    const closing = marker[1] === '/';
    if (closing !== hidden) throw new Error(`README.md line ${i + 1}: ${line.trim()} does not pair with the marker before it`);
    hidden = !closing;
  });
  if (hidden) throw new Error('README.md: a <!-- repo-only --> block is not closed');
  return out.join('\n').replace(/\n{3,}/g, '\n\n');
}

/** Writes pkg/README.md from README.md. */
export function writeNpmReadme() {
  writeFileSync(join(root, 'pkg/README.md'), npmReadme(readFileSync(join(root, 'README.md'), 'utf8')));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) writeNpmReadme();
