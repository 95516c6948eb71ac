'use client';
// A client component: the browser build, with useSchema and a module-scope
// client (also evaluated on the server when Next prerenders this page).
import { useEffect, useState } from 'react';
import { createClientSync } from 'stormguard';
import { useSchema } from 'stormguard/react';

const client = createClientSync({ timeoutMs: 3000, retry: { maxAttempts: 2, baseDelayMs: 20 } });
const FALLBACK = { title: 'Built-in layout' };

export function Layout() {
  const [url, setUrl] = useState(null);
  useEffect(() => setUrl(new URLSearchParams(location.search).get('layout')), []);
  const { data, source, error } = useSchema(client, url, { cacheKey: 'layout', fallback: FALLBACK });
  return (
    <main data-testid="view" data-state={data === undefined ? 'loading' : source}>
      <h1 data-testid="title">{data?.title ?? '…'}</h1>
      {error && <p data-testid="error">{error.name}</p>}
    </main>
  );
}
