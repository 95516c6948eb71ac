// A server-driven UI: the page's layout is a JSON document loaded through
// stormguard's schema(), which keeps the last good copy in LocalStorage.
//   ?layout=URL  where the layout comes from
//   ?alt=URL     a second source the "Switch source" button moves to
//   ?wasm=URL    load the wasm from there (what a dev server that answers a
//                missing file with index.html does to the client)
//   ?transition  "Switch source" moves in a transition that a sibling holds
//                pending until "Release" (a router's navigation waiting for its
//                next page's code), and the view has a "Reload" button (refresh)
import { Suspense, useState, useTransition } from 'react';
import { createClientSync } from 'stormguard';
import { useSchema } from 'stormguard/react';

const params = new URLSearchParams(location.search);

// One client for the page, at once: its calls wait for the wasm (README, "A client at once").
const client = createClientSync({
  timeoutMs: 3000,
  retry: { maxAttempts: 2, baseDelayMs: 50 },
  ...(params.has('wasm') && { wasm: params.get('wasm') }),
});

const sources = [params.get('layout'), params.get('alt')].filter(Boolean);
const transition = params.has('transition');

// What holds a transition pending: suspends until "Release" is clicked.
let release;
const held = new Promise((resolve) => { release = resolve; });
let released = false;
held.then(() => { released = true; });
function Hold({ on }) {
  if (on && !released) throw held;
  return null;
}

const FALLBACK = {
  title: 'Dashboard',
  blocks: [
    { type: 'text', text: 'The latest layout could not be loaded. Basic features are available.' },
    { type: 'button', label: 'Try again' },
  ],
};

const isLayout = (v) => typeof v === 'object' && v !== null && typeof v.title === 'string' && Array.isArray(v.blocks);

export function App() {
  const [shown, setShown] = useState(true);
  const [index, setIndex] = useState(0);
  const [holding, setHolding] = useState(false);
  const [, startTransition] = useTransition();
  const next = () => setIndex((i) => (i + 1) % sources.length);
  const switchSource = () => (transition ? startTransition(() => { next(); setHolding(true); }) : next());
  return (
    <div className="app">
      <nav className="toolbar">
        <button data-testid="toggle" onClick={() => setShown((s) => !s)}>{shown ? 'Hide layout' : 'Show layout'}</button>
        {sources.length > 1 && (
          <button data-testid="switch" onClick={switchSource}>Switch source</button>
        )}
        {transition && <button data-testid="release" onClick={() => release()}>Release</button>}
      </nav>
      {shown ? (
        <Suspense fallback={<p data-testid="suspended">Loading…</p>}>
          <LayoutView url={sources[index] ?? null} />
          <Hold on={holding} />
        </Suspense>
      ) : <p data-testid="hidden">Layout hidden.</p>}
    </div>
  );
}

function LayoutView({ url }) {
  const { data, source, loading, error, ageMs, refresh } = useSchema(client, url, {
    cacheKey: 'layout',
    version: 1,
    fallback: FALLBACK,
    validate: isLayout,
  });
  const state = loading && data === undefined ? 'loading' : (source ?? 'none');
  return (
    <main data-testid="view" data-state={state}>
      {(source === 'cache' || source === 'fallback') && (
        <div className="banner" role="status" data-testid="banner">
          <strong>Offline template</strong>{' '}
          {source === 'cache'
            ? `— the server is not answering; showing the layout saved ${Math.round((ageMs ?? 0) / 1000)} s ago.`
            : '— the server is not answering and no saved layout exists; showing the built-in one.'}
          {error && <span className="reason" data-testid="reason" title={error.message}> ({error.name})</span>}{' '}
          <button data-testid="retry" onClick={refresh}>Retry</button>
        </div>
      )}
      {transition && <button data-testid="reload" onClick={refresh}>Reload</button>}
      {data === undefined ? <Skeleton /> : <Layout layout={data} />}
    </main>
  );
}

function Layout({ layout }) {
  return (
    <section data-testid="layout">
      <h1 data-testid="title">{layout.title}</h1>
      {layout.blocks.map((b, i) => {
        if (b.type === 'text') return <p key={i}>{b.text}</p>;
        if (b.type === 'card') return (
          <article key={i} className="card"><h2>{b.title}</h2><p>{b.text}</p></article>
        );
        if (b.type === 'button') return <button key={i} className="primary">{b.label}</button>;
        return null;
      })}
    </section>
  );
}

function Skeleton() {
  return (
    <section data-testid="skeleton" aria-busy="true" className="skeleton">
      <div className="bar wide" />
      <div className="bar" />
      <div className="bar" />
      <div className="bar short" />
    </section>
  );
}
