// wasm-opt's flags for the shipped module, in one place: scripts/build.mjs
// optimizes pkg/ with them, and bench/size.mjs's twiggy breakdown uses the
// same ones (plus -g to keep names) so its function sizes are those that ship.
//
// Measured on the shipped gzip size (issue 19):
// - --one-caller-inline-max-function-size=0: with LLVM's inliner off or at a
//   small threshold (.cargo/config.toml) a function with one caller is better
//   left a function: the inlined copies compress worse (-2.9 KB gzip on top of
//   it; -3.4 KB at threshold 15, issue 28).
// - --low-memory-unused: the module never uses addresses below 1 KiB (rustc
//   puts the stack first), so loads and stores fold constant offsets
//   (-0.13 KB gzip on top of the flag above; -0.55 KB without it).
// - --always-inline-max-function-size=5 (binaryen's default 2): the wrappers of
//   up to 5 bytes inlined everywhere (issue 39, gzip of the engine's module:
//   -197; 3: -133, 4: -141, 6: -182, 8: +1,548; the boot module's -26).
// - -Oz run three times (issue 39): what one run leaves, inlined and folded,
//   gives the next more to remove (gzip of the engine's module: -242 with two
//   runs, -279 with three, --converge the same; the boot module's -14).
/** The wasm features the module uses (rustc's defaults for the target). */
export const WASM_FEATURES = [
  '--enable-bulk-memory', '--enable-nontrapping-float-to-int', '--enable-sign-ext',
  '--enable-reference-types', '--enable-multivalue', '--enable-mutable-globals',
];
export const WASM_OPT_ARGS = ['-Oz', '--one-caller-inline-max-function-size=0', '--always-inline-max-function-size=5', '--low-memory-unused', ...WASM_FEATURES, '-Oz', '-Oz'];
// The boot build's module (scripts/build.mjs, inlined as hex in its glue) without the one-caller rule:
// that small module compresses better with wasm-opt's default inlining (its hex, gzip after esbuild:
// 5,211 bytes against 5,541 with the engine's flags; the engine's own is the other way round).
export const BOOT_WASM_OPT_ARGS = WASM_OPT_ARGS.filter((a) => !a.startsWith('--one-caller-inline-max-function-size'));
