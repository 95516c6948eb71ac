// axios with axios-retry (3 retries, exponential delay).
import axios from 'axios';
import axiosRetry from 'axios-retry';

const api = axios.create();
axiosRetry(api, { retries: 3, retryDelay: axiosRetry.exponentialDelay });

export async function login(body: unknown, signal?: AbortSignal): Promise<unknown> {
  return (await api.post('/api/login', body, { signal })).data;
}

export async function get(path: string, token: string, signal?: AbortSignal): Promise<unknown> {
  return (await api.get(path, { headers: { authorization: `Bearer ${token}` }, signal })).data;
}
