// A route handler calling out through stormguard.
import { api, fault } from '../../../lib/api.js';

export const dynamic = 'force-dynamic';

export async function GET(request) {
  const id = new URL(request.url).searchParams.get('id') ?? 'next-route';
  const client = api;
  try {
    const body = await client.request(`${fault()}/fail-first?n=1&id=${encodeURIComponent(id)}`);
    return Response.json({ ok: true, body, attempts: client.stats().attempts > 0 });
  } catch (e) {
    return Response.json({ ok: false, error: `${e.name}: ${e.message}` }, { status: 502 });
  }
}
