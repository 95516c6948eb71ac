// stormguard/testing: faultyFetch's types.
import { createClient } from 'stormguard';
import { faultyFetch } from 'stormguard/testing';
import type { FaultyCall, FaultyFetch, FaultyReply } from 'stormguard/testing';

const fetch = faultyFetch(
  [
    { match: '/orders', reply: [503, 'reset', { delayMs: 100 }, { status: 429, retryAfter: 1 }, 'stall', 'hang'] },
    { match: /\/users\/\d+$/, reply: [new Response('{}'), (req) => (req.method === 'POST' ? 201 : 'reset')] },
    { match: (req: Request) => req.headers.has('authorization'), reply: [{ status: 401, json: { error: 'stale' } }] },
  ],
  (req) => globalThis.fetch(req),
);
const f: FaultyFetch = fetch;
const calls: FaultyCall[] = f.calls;
const first: string = calls[0].url;
const reply: FaultyReply | 'fallback' = calls[0].reply;
void first; void reply;
faultyFetch({ reply: [503] });
faultyFetch();
export const client = createClient({ fetch });

// @ts-expect-error a reply is an item, not a list of strings of any kind
faultyFetch([{ reply: ['boom'] }]);
// @ts-expect-error match is a string, RegExp or function
faultyFetch([{ match: 42, reply: [] }]);
