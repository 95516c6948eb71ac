// Plain fetch.
async function json(res: Response): Promise<unknown> {
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return res.json();
}

export async function login(body: unknown, signal?: AbortSignal): Promise<unknown> {
  return json(await fetch('/api/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal }));
}

export async function get(path: string, token: string, signal?: AbortSignal): Promise<unknown> {
  return json(await fetch(path, { headers: { authorization: `Bearer ${token}` }, signal }));
}
