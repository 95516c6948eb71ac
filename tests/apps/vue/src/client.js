import { createClient } from 'stormguard';

// One client for the page, created once (useSchema takes the promise as is).
export const client = createClient({ timeoutMs: 3000, retry: { maxAttempts: 2, baseDelayMs: 50 } });
