// Live calls through the package against the fault server serving this page.
import { createClient } from '/pkg/index.js';

const $ = (id) => document.getElementById(id);
let client;
let unsubscribe = [];

async function newClient() {
  unsubscribe.forEach((off) => off());
  client?.close();
  client = await createClient({
    timeoutMs: Number($('timeout').value),
    deadlineMs: Number($('deadline').value),
    retry: { maxAttempts: Number($('attempts').value) },
    breaker: { minSamples: 5, openMs: 3000 },
  });
  unsubscribe = ['attempt', 'retry', 'timeout', 'giveUp', 'breaker'].map((type) =>
    client.on(type, (e) => {
      const extra = e.type === 'retry' ? ` in ${Math.round(e.delayMs)} ms` : e.type === 'breaker' ? ` ${e.from} → ${e.to}` : '';
      line('ev', `  ${e.type}${e.attempt ? ` #${e.attempt}` : ''}${e.status ? ` ${e.status}` : ''}${e.errorName ? ` ${e.errorName}` : ''}${extra}`);
    }));
  line('ev', 'new client');
  show();
}

function line(cls, text) {
  const li = document.createElement('li');
  li.className = cls;
  li.textContent = text;
  $('log').prepend(li);
}

function show() {
  $('stats').textContent = JSON.stringify(client.stats(), null, 1);
  $('breakers').textContent = JSON.stringify(client.breakers(), null, 1);
}

async function call(path) {
  const started = performance.now();
  try {
    const body = await client.request(path + (path.includes('?') ? '&' : '?') + 'id=demo');
    line('ok', `${path} → ${JSON.stringify(body)} (${Math.round(performance.now() - started)} ms)`);
  } catch (e) {
    const why = e.retryDenied ? `, not retried: ${e.retryDenied}` : '';
    line('err', `${path} → ${e.name}${e.status ? ` ${e.status}` : ''}${e.phase ? ` (${e.phase})` : ''}, ${e.attempts} attempt(s), ${Math.round(e.elapsedMs)} ms${why}`);
  }
  show();
}

for (const b of document.querySelectorAll('button[data-path]')) b.onclick = () => call(b.dataset.path);
$('burst').onclick = () => { for (let i = 0; i < 20; i++) call('/status/503'); };
$('reset').onclick = newClient;
setInterval(() => client && show(), 500);
await newClient();
