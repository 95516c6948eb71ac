import { createClientSync } from 'stormguard';

// One client for the page, at once: its calls wait for the wasm (README, "A client at once").
export const client = createClientSync({ timeoutMs: 3000, retry: { maxAttempts: 2, baseDelayMs: 50 } });
