// The schema() panel: a screen whose layout document comes from the same
// capacity-limited backend as the load, through client.schema(). While the
// backend fails (or the breaker is open and nothing is sent) it shows the
// last good layout from LocalStorage with a banner, or a skeleton when there
// is none.

export const LAYOUT_URL = '/capacity?id=layout';
export const LAYOUT_CACHE_KEY = 'demo-layout';
export const LAYOUT_VERSION = 3;

// What the backend's layout service returns. The capacity model's own body is
// `{ ok: true }`, so the page's fetch wrapper (app.js) puts this document in
// place of a 200 answer to LAYOUT_URL; status, timing and failures are the
// backend's own.
export const LAYOUT_DOC = {
  version: LAYOUT_VERSION,
  title: 'Orders',
  blocks: [
    { type: 'stats', items: [['Open orders', '1 284'], ['Shipped today', '342'], ['Late', '7']] },
    { type: 'list', title: 'Latest orders', items: ['#48211 · 3 items · Lyon', '#48210 · 1 item · Porto', '#48209 · 5 items · Gent', '#48208 · 2 items · Turin'] },
    { type: 'actions', items: ['New order', 'Export CSV'] },
  ],
};

// While there is neither network nor a saved copy: a skeleton.
const SKELETON = { skeleton: true };

const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

function renderLayout(doc) {
  const root = el('div', 'screen');
  if (!doc || doc.skeleton) {
    root.classList.add('skeleton');
    root.append(el('div', 'sk sk-title'));
    const stats = el('div', 'stats');
    for (let i = 0; i < 3; i++) stats.append(el('div', 'sk sk-stat'));
    root.append(stats);
    for (let i = 0; i < 4; i++) root.append(el('div', 'sk sk-line'));
    return root;
  }
  root.append(el('h3', null, doc.title));
  for (const b of doc.blocks) {
    if (b.type === 'stats') {
      const stats = el('div', 'stats');
      for (const [label, value] of b.items) {
        const s = el('div', 'stat');
        s.append(el('b', null, value), el('span', null, label));
        stats.append(s);
      }
      root.append(stats);
    } else if (b.type === 'list') {
      root.append(el('h4', null, b.title));
      const ul = el('ul');
      for (const item of b.items) ul.append(el('li', null, item));
      root.append(ul);
    } else if (b.type === 'actions') {
      const row = el('div', 'actions');
      for (const a of b.items) row.append(el('span', 'fake-button', a));
      root.append(row);
    }
  }
  return root;
}

const fmtAge = (ms) => (ms < 60_000 ? `${Math.round(ms / 1000)} s` : `${Math.round(ms / 60_000)} min`);

/**
 * Starts the panel in `box`. `createClient` is stormguard's; `onCall` is told
 * of every logical call (the page counts them with the load's calls).
 * Returns { stop(), forget(), state() }.
 */
export async function startLayoutPanel(box, { createClient, options, onCall, everyMs = 1000 }) {
  const client = await createClient(options);
  const view = box.querySelector('.layout-view');
  const banner = box.querySelector('.layout-banner');
  const status = box.querySelector('.layout-status');
  view.replaceChildren(renderLayout(null));
  let last = { source: 'loading' };
  let busy = false;
  if (typeof client.schema !== 'function') {
    status.textContent = 'this build of stormguard has no schema() yet';
    banner.hidden = false;
    banner.className = 'layout-banner bad';
    banner.textContent = 'client.schema() is missing from pkg/: rebuild the package (npm run build) to see this panel work.';
    box.dataset.source = 'unsupported';
    box.querySelector('.layout-breaker').hidden = true;
    return { stop: () => client.close(), forget() {}, state: () => ({ source: 'unsupported', breaker: 'closed' }) };
  }

  const breaker = () => client.breakers().find((b) => b.key.endsWith('/capacity')) ?? { state: 'closed', openForMs: 0 };

  function show(r) {
    const br = breaker();
    const chip = box.querySelector('.layout-breaker');
    chip.textContent = br.state === 'open' ? `breaker open · ${Math.ceil(br.openForMs / 1000)} s` : `breaker ${br.state}`;
    chip.dataset.state = br.state;
    if (!r) return;
    box.dataset.source = r.source;
    view.replaceChildren(renderLayout(r.data));
    const why = r.error ? `${r.error.name}${r.error.status ? ` ${r.error.status}` : ''}` : '';
    if (r.source === 'network') {
      banner.hidden = true;
      status.textContent = 'live from the server';
    } else if (r.source === 'cache') {
      banner.hidden = false;
      banner.className = 'layout-banner warn';
      banner.textContent = br.state === 'open'
        ? `The server is struggling. Showing the layout saved ${fmtAge(r.ageMs ?? 0)} ago; the breaker is open, so this screen sends nothing for ${Math.ceil(br.openForMs / 1000)} s.`
        : `The last request failed (${why}). Showing the layout saved ${fmtAge(r.ageMs ?? 0)} ago.`;
      status.textContent = `saved copy · ${why}`;
    } else {
      banner.hidden = false;
      banner.className = 'layout-banner bad';
      banner.textContent = `No saved layout and the server does not answer (${why || 'no answer'}): a placeholder until it does.`;
      status.textContent = `placeholder · ${why}`;
    }
  }

  async function refresh() {
    if (busy) return show(null);
    busy = true;
    onCall?.();
    try {
      last = await client.schema(LAYOUT_URL, {
        cacheKey: LAYOUT_CACHE_KEY,
        version: LAYOUT_VERSION,
        fallback: SKELETON,
        validate: (v) => v && typeof v === 'object' && Array.isArray(v.blocks),
      });
      show(last);
    } catch (e) {
      // schema() rejects only when the caller aborts; anything else is a bug worth showing
      last = { source: 'error' };
      box.dataset.source = 'error';
      status.textContent = `schema() rejected: ${e?.name ?? e}`;
      banner.hidden = false;
      banner.className = 'layout-banner bad';
      banner.textContent = `client.schema() rejected: ${e?.message ?? e}`;
    } finally {
      busy = false;
    }
  }

  const timer = setInterval(refresh, everyMs);
  refresh();
  return {
    stop() {
      clearInterval(timer);
      client.close();
    },
    forget() {
      try {
        localStorage.removeItem(`stormguard:${LAYOUT_CACHE_KEY}`);
      } catch {}
    },
    state: () => ({ source: last.source, breaker: breaker().state }),
    client,
  };
}
