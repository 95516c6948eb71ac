// stormguard/react: useSchema's types.
import { createClient, isStormguardError } from 'stormguard';
import type { Client, StandardSchemaV1 } from 'stormguard';
import { useSchema } from 'stormguard/react';
import type { UseSchemaResult, SchemaSource } from 'stormguard/react';

type Equal<A, B> = (<X>() => X extends A ? 1 : 2) extends <X>() => X extends B ? 1 : 2 ? true : false;
function expectType<A, B>(ok: Equal<A, B>): void { void ok; }

interface Layout { title: string; blocks: { type: 'text' | 'button'; text: string }[] }

const clientPromise = createClient({ timeoutMs: 2000 });

export function WithPromise(): string {
  // The Promise from createClient is accepted as it is.
  const r = useSchema<Layout>(clientPromise, '/layout.json', { cacheKey: 'layout', version: 2, maxAgeMs: 60_000 });
  expectType<typeof r, UseSchemaResult<Layout>>(true);
  expectType<typeof r.data, Layout | undefined>(true);
  expectType<typeof r.source, 'network' | 'cache' | 'fallback' | 'none' | undefined>(true);
  expectType<typeof r.stale, boolean>(true);
  expectType<typeof r.loading, boolean>(true);
  expectType<typeof r.ageMs, number | undefined>(true);
  expectType<typeof r.error, Error | undefined>(true);
  expectType<ReturnType<typeof r.refresh>, Promise<void>>(true);
  if (isStormguardError(r.error) && r.error.code === 'HTTP') void r.error.status;
  // @ts-expect-error data may be undefined (loading, or nothing to show)
  void r.data.title;
  return r.data?.title ?? (r.loading ? 'loading' : 'none');
}

export function WithClient(client: Client, url: URL | null): SchemaSource | undefined {
  // A resolved Client, a URL object or null (nothing to load), T from the fallback.
  const r = useSchema(client, url, {
    fallback: { title: 'offline', blocks: [] } as Layout,
    validate: (v) => typeof v === 'object' && v !== null,
  });
  expectType<typeof r.data, Layout | undefined>(true);
  const untyped = useSchema(client, '/x');
  expectType<typeof untyped.data, unknown>(true);
  return r.source;
}

export function Wrong(client: Client): void {
  // @ts-expect-error the client, not its options
  useSchema({ timeoutMs: 1 }, '/x');
  // @ts-expect-error the fallback must be a T
  useSchema<Layout>(client, '/x', { fallback: { title: 1 } });
  // @ts-expect-error a URL, not a number
  useSchema(client, 42);
  // @ts-expect-error data is read-only information: no setter exists
  useSchema(client, '/x').setData(1);
}

export function WithSchema(client: Client): string {
  // A Standard Schema (zod, valibot, arktype): data is its inferred output, as with client.schema().
  const layoutSchema: StandardSchemaV1<unknown, Layout> = {
    '~standard': { version: 1, vendor: 'test', validate: (v) => ({ value: v as Layout }) },
  };
  const r = useSchema(client, '/layout.json', { validate: layoutSchema, cacheKey: 'layout' });
  expectType<typeof r.data, Layout | undefined>(true);
  return r.data?.title ?? '';
}
