// webpack 5 with nothing for stormguard: it resolves the worker's and the
// wasm's `new URL(..., import.meta.url)` itself. The page is webpack.html,
// copied beside the bundle (as index.html) by the test.
const path = require('node:path');

module.exports = {
  mode: 'production',
  entry: './src/main.js',
  output: { path: path.resolve(__dirname, 'dist-webpack'), filename: 'main.js', clean: true },
  performance: { hints: false },
};
