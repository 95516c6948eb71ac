// The page: a login POST, then two GETs with its token, each answer checked
// with zod. When both GETs' data is on the page, the first data is rendered:
// performance.mark('first-data') and window.firstData (ms from navigation start).
import { useEffect } from 'react';
import { useQuery } from '@tanstack/react-query';
import { z } from 'zod';
import { get, login } from '@http';

const Session = z.object({ token: z.string() });
const Me = z.object({ id: z.string(), name: z.string() });
const Items = z.object({ items: z.array(z.object({ id: z.number(), title: z.string(), price: z.number() })) });

declare global {
  interface Window { firstData?: number; firstDataError?: string }
}

export function App() {
  const session = useQuery({
    queryKey: ['session'],
    queryFn: async ({ signal }) => Session.parse(await login({ user: 'demo', password: 'demo' }, signal)),
    staleTime: Infinity,
  });
  const token = session.data?.token;
  const me = useQuery({
    queryKey: ['me', token],
    queryFn: async ({ signal }) => Me.parse(await get('/api/me', token as string, signal)),
    enabled: token !== undefined,
  });
  const items = useQuery({
    queryKey: ['items', token],
    queryFn: async ({ signal }) => Items.parse(await get('/api/items', token as string, signal)),
    enabled: token !== undefined,
  });
  const error = session.error ?? me.error ?? items.error;
  const done = me.data !== undefined && items.data !== undefined;
  useEffect(() => {
    if (done) {
      performance.mark('first-data');
      window.firstData = performance.now();
    } else if (error) {
      window.firstDataError = String(error);
    }
  }, [done, error]);
  if (error) return <p role="alert">{error.message}</p>;
  if (!done) return <p>Loading…</p>;
  return (
    <main>
      <h1 data-testid="name">Hello, {me.data.name}</h1>
      <ul>
        {items.data.items.map((it) => (
          <li key={it.id}>{it.title}: {it.price.toFixed(2)}</li>
        ))}
      </ul>
    </main>
  );
}
