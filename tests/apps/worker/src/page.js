// The page of webpack.page.config.cjs: a client in the page itself, its wasm
// preloaded by webpack-page.html.
import { createClient } from 'stormguard';

const out = document.querySelector('[data-testid="out"]');
createClient().then(
  (client) => {
    out.textContent = typeof client.request;
    out.dataset.state = 'ready';
  },
  (e) => {
    out.textContent = `${e.name}: ${e.message}`;
    out.dataset.state = 'error';
  },
);
