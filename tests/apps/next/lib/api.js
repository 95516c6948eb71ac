// One client for the server side, created at module scope as the README
// does: route handlers and server components share it.
import { createClientSync } from 'stormguard';

export const api = createClientSync({ timeoutMs: 3000, retry: { maxAttempts: 3, baseDelayMs: 20 } });
export const fault = () => process.env.STORMGUARD_FAULT_URL;
