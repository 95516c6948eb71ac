// ESM TypeScript (module nodenext), no DOM lib: the same surface, typed.
import { createClient, type SchemaResult } from 'stormguard';

const api = await createClient({ headers: new Map([['x-app', 'ts-node-esm']]), wasm: new URL('file:///x.wasm') });
const layout: SchemaResult<{ title: string }> = await api.schema<{ title: string }>('http://127.0.0.1/layout', {
  query: [['v', 1]],
  body: new URLSearchParams({ a: '1' }),
  fallback: { title: 'Built-in' },
});
const title: string | undefined = layout.data?.title;
void title;
const res: Response = await api.fetch('http://127.0.0.1/x', { method: 'GET', timeoutMs: 100 });
void res;
