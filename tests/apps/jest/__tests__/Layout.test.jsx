/**
 * @jest-environment jest-fixed-jsdom
 */
// A React component using useSchema, rendered in jsdom: the one documented
// line (the docblock above, or `testEnvironment: 'jest-fixed-jsdom'` in the
// Jest config) gives jsdom Node's fetch, and the rest works as in a browser.
import { act } from 'react';
import { createRoot } from 'react-dom/client';
import { createClient } from 'stormguard';
import { useSchema } from 'stormguard/react';

globalThis.IS_REACT_ACT_ENVIRONMENT = true;
const FAULT = process.env.STORMGUARD_FAULT_URL;
const RUN = Date.now().toString(36); // the fault server keeps per-id counters: one set per run
const client = createClient({ retry: { maxAttempts: 2, baseDelayMs: 5 }, crossTab: false });
const FALLBACK = { title: 'Built-in layout' };

function Layout({ url }) {
  const { data, source, error } = useSchema(client, url, { cacheKey: 'layout', fallback: FALLBACK });
  if (data === undefined) return <p>loading</p>;
  return <h1 data-source={source}>{data.title}{error ? ` (${error.name})` : ''}</h1>;
}

async function render(url) {
  const el = document.createElement('div');
  document.body.append(el);
  const root = createRoot(el);
  await act(async () => root.render(<Layout url={url} />));
  for (let i = 0; i < 100 && !el.querySelector('h1'); i++) {
    await act(() => new Promise((r) => setTimeout(r, 20)));
  }
  return { el, root };
}

afterEach(() => localStorage.clear());

test('renders the network copy, then the cached copy when the server fails', async () => {
  const doc = encodeURIComponent(JSON.stringify({ title: 'From the API' }));
  let { el, root } = await render(`${FAULT}/json?id=jest-layout-${RUN}&body=${doc}`);
  expect(el.querySelector('h1').textContent).toBe('From the API');
  expect(el.querySelector('h1').dataset.source).toBe('network');
  act(() => root.unmount());

  ({ el, root } = await render(`${FAULT}/status/503?id=jest-layout-down-${RUN}`));
  expect(el.querySelector('h1').dataset.source).toBe('cache');
  expect(el.querySelector('h1').textContent).toBe('From the API (HttpError)');
  act(() => root.unmount());
});

test('renders the fallback when there is neither network nor cache', async () => {
  // Another path than the test above: its two failed attempts and these would be three in a
  // row for one breaker, which opens (the default) and answers CircuitOpenError instead.
  const { el, root } = await render(`${FAULT}/status/500?id=jest-fallback-${RUN}`);
  expect(el.querySelector('h1').dataset.source).toBe('fallback');
  expect(el.querySelector('h1').textContent).toBe('Built-in layout (HttpError)');
  act(() => root.unmount());
});
