// A server entry bundled with stormguard in it. `node dist/server.js <faultURL> <id> [wasm]` makes a
// client (with `wasm` when given) and prints one call's result, or the error, as JSON.
import { createClient } from 'stormguard';

const [base, id, wasm] = process.argv.slice(2);
try {
  const api = await createClient({ retry: { maxAttempts: 3 }, ...(wasm ? { wasm } : {}) });
  const body = await api.request(`${base}/fail-first?n=1&id=${id}`);
  console.log(JSON.stringify({ ok: true, body }));
  api.close();
} catch (e) {
  console.log(JSON.stringify({ ok: false, name: e.name, option: e.option, message: e.message }));
}
