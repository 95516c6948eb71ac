// The README's main.js, with the URLs from the page's query (?url=URL&n=N):
// the messages are posted at once, before the worker has loaded anything.
const params = new URLSearchParams(location.search);
const out = document.querySelector('[data-testid="out"]');
const replies = [];

const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
worker.onmessage = ({ data }) => {
  replies.push(data);
  out.textContent = JSON.stringify(replies);
  out.dataset.count = String(replies.length);
};
worker.onerror = (e) => {
  out.textContent = `worker error: ${e.message}`;
  out.dataset.count = 'error';
};
for (let i = 0; i < Number(params.get('n') ?? 1); i++) worker.postMessage({ url: `${params.get('url')}&i=${i}` });
