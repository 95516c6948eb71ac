// README "Preloading the wasm", webpack 5: a page (not the worker) whose HTML
// preloads the wasm. The rule gives the asset a fixed name for the tag in
// webpack-page.html (tests/e2e/apps.test.mjs checks the rule is README's and
// that the page asks for the wasm once).
const path = require('node:path');

module.exports = {
  mode: 'production',
  entry: './src/page.js',
  output: { path: path.resolve(__dirname, 'dist-webpack-page'), filename: 'main.js', clean: true },
  performance: { hints: false },
  module: {
    rules: [{ test: /stormguard_bg\.wasm$/, type: 'asset/resource', generator: { filename: '[name][ext]' } }],
  },
};
