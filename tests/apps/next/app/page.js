// A server component rendered per request: a call through stormguard on the server.
import { api, fault } from '../lib/api.js';

export const dynamic = 'force-dynamic';

export default async function Home() {
  const client = api;
  const body = await client.request(`${fault()}/fail-first?n=1&id=next-page-${Date.now()}`);
  return (
    <main>
      <h1 data-testid="server">attempt {body.attempt}</h1>
      <p data-testid="stats">{JSON.stringify(client.stats())}</p>
    </main>
  );
}
