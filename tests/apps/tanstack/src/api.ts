// api.ts
import { QueryClient } from '@tanstack/react-query';
import { createClientSync } from 'stormguard';

export const api = createClientSync();   // at once: no top-level await; a failed load is the query's error

// stormguard retries what is safe to retry, within its budget and deadline, and fails fast while an
// endpoint's breaker is open; TanStack's own retries (3 by default) would multiply its attempts.
export const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false } } });
