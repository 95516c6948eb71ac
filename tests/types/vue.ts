// stormguard/vue: useSchema's types.
import { computed, ref } from 'vue';
import type { Ref, ShallowRef } from 'vue';
import { createClient, isStormguardError } from 'stormguard';
import type { Client, StandardSchemaV1 } from 'stormguard';
import { useSchema } from 'stormguard/vue';
import type { UseSchemaReturn } from 'stormguard/vue';

type Equal<A, B> = (<X>() => X extends A ? 1 : 2) extends <X>() => X extends B ? 1 : 2 ? true : false;
function expectType<A, B>(ok: Equal<A, B>): void { void ok; }

interface Layout { title: string; blocks: { type: 'text' | 'button'; text: string }[] }

export function setupWithPromise() {
  const r = useSchema<Layout>(createClient(), '/layout.json', { cacheKey: 'layout', version: 'v2' });
  expectType<typeof r, UseSchemaReturn<Layout>>(true);
  expectType<typeof r.data.value, Layout | undefined>(true);
  expectType<typeof r.source.value, 'network' | 'cache' | 'fallback' | 'none' | undefined>(true);
  expectType<typeof r.stale.value, boolean>(true);
  expectType<typeof r.loading.value, boolean>(true);
  expectType<typeof r.ageMs.value, number | undefined>(true);
  expectType<typeof r.error.value, Error | undefined>(true);
  expectType<ReturnType<typeof r.refresh>, Promise<void>>(true);
  // The results are refs: they work in computed() and templates.
  const title = computed(() => r.data.value?.title ?? 'loading');
  const asRef: Readonly<Ref<Layout | undefined>> = r.data;
  const asShallow: Readonly<ShallowRef<boolean>> = r.loading;
  void asRef; void asShallow;
  const e = r.error.value;
  if (isStormguardError(e) && e.code === 'CIRCUIT_OPEN') void e.retryInMs;
  // @ts-expect-error the refs are read-only for the caller
  r.data.value = { title: 'x', blocks: [] };
  return { title };
}

export function setupWithRefs(client: Client) {
  // The URL as a ref or a getter (a change aborts and restarts the call), options as a getter.
  const url = ref<string | null>('/layout.json');
  const version = ref(1);
  const a = useSchema<Layout>(client, url);
  const b = useSchema(client, () => `/layout.json?v=${version.value}`, () => ({
    version: version.value,
    fallback: { title: 'offline', blocks: [] } as Layout,
  }));
  expectType<typeof b.data.value, Layout | undefined>(true);
  const c = useSchema(client, new URL('https://api.example.com/layout.json'));
  expectType<typeof c.data.value, unknown>(true);
  // @ts-expect-error a URL, not a number
  useSchema(client, 42);
  // @ts-expect-error the fallback must be a T
  useSchema<Layout>(client, url, { fallback: { blocks: 1 } });
  return { a, b };
}

export function setupWithSchema(client: Client) {
  // A Standard Schema (zod, valibot, arktype): data is its inferred output, as with client.schema().
  const layoutSchema: StandardSchemaV1<unknown, Layout> = {
    '~standard': { version: 1, vendor: 'test', validate: (v) => ({ value: v as Layout }) },
  };
  const r = useSchema(client, '/layout.json', { validate: layoutSchema, cacheKey: 'layout' });
  expectType<typeof r.data.value, Layout | undefined>(true);
  const g = useSchema(client, () => '/layout.json', () => ({ validate: layoutSchema }));
  expectType<typeof g.data.value, Layout | undefined>(true);
  return { r, g };
}
