// One query through stormguard, as the README's TanStack Query recipe writes
// it (tests/e2e/apps.test.mjs checks the queryFn and the narrowing against it):
//   ?url=URL    what the query loads (same origin: the test's server is also the fault server)
//   ?alt=URL    a second URL the "Switch source" button moves to (a new query key)
// "Hide" unmounts the query's component; "Refetch" calls TanStack's refetch().
import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { isStormguardError } from 'stormguard';
import { api } from './api';

type Doc = { title: string };

const params = new URLSearchParams(location.search);
const sources = [params.get('url'), params.get('alt')].filter((u): u is string => u !== null);

export function App() {
  const [shown, setShown] = useState(true);
  const [index, setIndex] = useState(0);
  const url = sources[index];
  return (
    <div className="app">
      <nav>
        <button data-testid="toggle" onClick={() => setShown((s) => !s)}>{shown ? 'Hide' : 'Show'}</button>
        {sources.length > 1 && (
          <button data-testid="switch" onClick={() => setIndex((i) => (i + 1) % sources.length)}>Switch source</button>
        )}
      </nav>
      {shown && url ? <DocView url={url} /> : <p data-testid="hidden">Nothing shown.</p>}
    </div>
  );
}

function DocView({ url }: { url: string }) {
  const { data, error, failureCount, failureReason, isFetching, refetch } = useQuery({
    queryKey: ['doc', url],
    queryFn: ({ signal }) => api.request<Doc>(url, { signal }),
  });
  const state = error ? 'error' : data ? 'success' : 'loading';
  // Read at render: TanStack renders again when the query settles.
  const stats = api.stats();
  return (
    <main
      data-testid="view"
      data-state={state}
      data-fetching={isFetching}
      data-failures={failureCount}
      data-failure-code={isStormguardError(failureReason) ? failureReason.code : ''}
    >
      {error && (
        <div role="alert" data-testid="error" data-code={isStormguardError(error) ? error.code : ''}
          data-attempts={isStormguardError(error) ? error.attempts : ''}>
          <p data-testid="message">{isStormguardError(error) && error.code === 'HTTP' ? `Error ${error.status}` : error.message}</p>
          <button data-testid="refetch" onClick={() => void refetch()}>Refetch</button>
        </div>
      )}
      {data && <h1 data-testid="title">{data.title}</h1>}
      {state === 'loading' && <p data-testid="loading">Loading…</p>}
      <output data-testid="stats" data-attempts={stats.attempts} data-requests={stats.requests}>
        {stats.attempts} attempts for {stats.requests} calls
      </output>
    </main>
  );
}
