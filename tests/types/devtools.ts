// stormguard/devtools: mountDevtools's types.
import { createClient } from 'stormguard';
import { mountDevtools } from 'stormguard/devtools';

export async function mount(box: HTMLElement): Promise<() => void> {
  const client = await createClient();
  const unmount: () => void = mountDevtools(client, box);
  mountDevtools(client)();
  // @ts-expect-error the client, not its promise
  mountDevtools(createClient());
  return unmount;
}
