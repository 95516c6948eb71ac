// CommonJS TypeScript (module node16): `import` compiles to require(), which
// loads the package's CommonJS build. Run after tsc as `node dist/main.js URL`.
import { createClient, HttpError, isStormguardError, type ClientOptions, type RequestOptions } from 'stormguard';

const options: ClientOptions = {
  headers: new Headers({ 'x-app': 'ts-node' }),
  retry: { baseDelayMs: 5 },
};
const call: RequestOptions = {
  headers: [['accept', 'application/json']],
  query: new URLSearchParams({ q: 'storm' }),
};

async function main(fault: string): Promise<void> {
  const api = await createClient(options);
  const echo = await api.request<{ query: Record<string, string>; headers: Record<string, string> }>(
    `${fault}/echo?id=ts-node`,
    call,
  );
  const error: unknown = await api.request(`${fault}/status/404?id=ts-node`).catch((e: unknown) => e);
  const status = error instanceof HttpError ? error.status : isStormguardError(error) ? error.code : 'not a stormguard error';
  process.stdout.write(JSON.stringify({ q: echo.query.q, app: echo.headers['x-app'], status }));
  api.close();
}

void main(process.argv[2] ?? '');
