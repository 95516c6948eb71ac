// ky with its defaults (retries included).
import ky from 'ky';

export function login(body: unknown, signal?: AbortSignal): Promise<unknown> {
  return ky.post('/api/login', { json: body, signal }).json();
}

export function get(path: string, token: string, signal?: AbortSignal): Promise<unknown> {
  return ky.get(path, { headers: { authorization: `Bearer ${token}` }, signal }).json();
}
