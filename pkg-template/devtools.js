// stormguard/devtools: mountDevtools, a live panel (plain DOM, no framework)
// of what a client's engine holds: its breakers, the retry budget's counters,
// holds, the queue, and the last calls with their attempts and decisions.
// Plain ESM with no import: nothing of it enters the main entry or the wasm,
// and importing it does nothing until mountDevtools is called.
//
// Everything shown comes from the client's public surface: stats(),
// breakers() and the events (README, "Stats and events"). Text goes in
// through textContent only: URLs and keys are data, never markup.
//
// The retry budget's window is not in stats(): the panel keeps its own copy
// of it (budgetWindow, below), an estimate of the engine's.

const EVENTS = ['attempt', 'retry', 'timeout', 'giveUp', 'breaker', 'fallback', 'wait'];
const MAX_CALLS = 20;
const MAX_LOG = 30;
const TICK_MS = 250;

const CSS = `
.sg-devtools{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;color:#1f2328;background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:8px;max-width:560px;box-sizing:border-box}
.sg-devtools.sg-float{position:fixed;right:8px;bottom:8px;z-index:2147483647;max-height:70vh;overflow:auto;box-shadow:0 4px 16px rgba(0,0,0,.15)}
.sg-devtools h4{margin:8px 0 4px;font-size:11px;text-transform:uppercase;color:#57606a}
.sg-devtools h4:first-child{margin-top:0}
.sg-devtools table{border-collapse:collapse;width:100%}
.sg-devtools td{padding:1px 6px 1px 0;vertical-align:top;word-break:break-all}
.sg-devtools [data-state=open]{color:#cf222e;font-weight:bold}
.sg-devtools [data-state=half-open]{color:#9a6700;font-weight:bold}
.sg-devtools [data-state=closed]{color:#1a7f37}
.sg-devtools [data-outcome=failed]{color:#cf222e}
.sg-devtools .sg-none{color:#8c959f}
`;

/** `tag` with `attrs` (data-* and class) and children (strings become text). */
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) if (v !== undefined) e.setAttribute(k, String(v));
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

/**
 * The retry budget's window as the engine keeps it (README, "budget"): 10
 * buckets of windowMs / 10 of `performance.now()`, each with the calls (first
 * attempts) and retries (granted: planned retries and hedges, less those given
 * back unsent) recorded in it. Fed with the 'attempt' events (a call's first
 * attempt, once per requestId: a 401 replay sends attempt 1 again) and with
 * stats().retries, which counts exactly the retries the budget granted and
 * kept; joined dedupe callers send nothing and count in neither. An estimate:
 * the engine reads its clock a little earlier than the listener runs, and a
 * retry given back leaves the bucket it was granted in, here the newest one
 * holding a retry.
 */
function budgetWindow({ ratio = 0.1, minRetries = 3, windowMs = 10000 } = {}) {
  const width = (windowMs >= 1 ? windowMs : 1) / 10;
  const buckets = new Map(); // bucket number -> { calls, retries }
  let latest = -Infinity;
  const bucketOf = (t) => (latest = Math.max(latest, Math.floor(t / width)));
  const live = (t) => {
    const b = bucketOf(t);
    for (const k of buckets.keys()) if (k <= b - 10) buckets.delete(k);
    return b;
  };
  const at = (t) => {
    const b = live(t);
    let c = buckets.get(b);
    if (!c) buckets.set(b, (c = { calls: 0, retries: 0 }));
    return c;
  };
  return {
    call(t) { at(t).calls++; },
    retries(t, n) {
      if (n > 0) at(t).retries += n;
      // Given back: from the newest buckets that hold one.
      for (const k of [...buckets.keys()].sort((a, b) => b - a)) {
        if (n >= 0) break;
        const c = buckets.get(k);
        const back = Math.min(c.retries, -n);
        c.retries -= back;
        n += back;
      }
    },
    /**
     * At `t`: `used` (retries in the window), `allowed` (the most the window's
     * calls allow: minRetries + ratio × calls, whole), and `next`, whether one
     * more retry would be granted now (the engine checks every run of the last
     * k buckets, k = 1..10, so calls long past do not fund retries now).
     */
    read(t) {
      const b = live(t);
      let calls = 0, retries = 0, next = true;
      for (let k = b; k > b - 10; k--) {
        const c = buckets.get(k);
        if (c) {
          calls += c.calls;
          retries += c.retries;
        }
        if (retries + 1 > minRetries + ratio * calls) next = false;
      }
      return { used: retries, allowed: Math.floor(minRetries + ratio * calls + 1e-9), calls, next, windowMs };
    },
  };
}

/** A duration as people read it: 20 ms, 1.5 s. */
const secs = (ms) => (ms < 1000 ? `${Math.round(Math.max(0, ms))} ms` : `${(ms / 1000).toFixed(1)} s`);

/** The call's record from the events, in order: what a row of "last calls" shows. */
function describe(call) {
  const steps = call.steps.map((s) => {
    switch (s.type) {
      case 'attempt': return `#${s.attempt} sent`;
      case 'retry': return `#${s.attempt} ${s.status ?? s.errorName} → retry in ${secs(s.delayMs)}`;
      case 'timeout': return `#${s.attempt} timed out`;
      case 'wait': return `wait ${secs(s.delayMs)} (${s.reason})`;
      case 'giveUp': return `gave up: ${s.status ?? s.errorName}`;
      case 'fallback': return `fallback (${s.errorName})`;
      case 'breaker': return `breaker ${s.from} → ${s.to}`;
      default: return s.type;
    }
  });
  return steps.join(' · ');
}

/** What a call's last event says of it: 'failed', 'retrying', 'waiting', 'fallback' or 'sent'. */
function outcome(call) {
  const last = call.steps[call.steps.length - 1]?.type;
  return { giveUp: 'failed', retry: 'retrying', timeout: 'retrying', wait: 'waiting', fallback: 'fallback' }[last] ?? 'sent';
}

/**
 * `mountDevtools(client, element?, { budget? })`: renders the panel into
 * `element` (else a floating box appended to `document.body`) and keeps it
 * live: on every event of the client and every 250 ms (open periods and holds
 * count down). `budget`: the client's `budget` option as it was created with
 * it (the client does not tell it; default: the defaults; `false`: none).
 * Returns the function that unmounts it (unsubscribes, stops the timer,
 * removes the panel); calling it twice is harmless.
 */
export function mountDevtools(client, element, { budget } = {}) {
  if (!client || typeof client.on !== 'function' || typeof client.stats !== 'function') {
    throw new TypeError('mountDevtools: the first argument is a stormguard client');
  }
  const root = el('div', { class: element ? 'sg-devtools' : 'sg-devtools sg-float', 'data-sg-devtools': '' });
  root.append(el('style', {}, CSS));
  const body = el('div');
  root.append(body);
  (element ?? document.body).append(root);

  const calls = new Map(); // requestId -> { method, url, steps }
  const holds = new Map(); // key -> { reason, until }
  const log = []; // breaker transitions with no call
  const now = () => performance.now();
  const budgetWin = budget === false ? null : budgetWindow(budget ?? {});
  const firsts = new Set(); // requestIds whose first attempt was counted
  let retriesSeen;
  /** stats().retries moved on since the last look: retries granted (or given back) now. */
  const sampleRetries = (stats) => {
    if (retriesSeen !== undefined && budgetWin) budgetWin.retries(now(), stats.retries - retriesSeen);
    retriesSeen = stats.retries;
  };
  try {
    sampleRetries(client.stats());
  } catch {
    // A closed client: nothing to count.
  }

  const onEvent = (e) => {
    try {
      sampleRetries(client.stats());
    } catch {
      // A closed client.
    }
    if (budgetWin && e.type === 'attempt' && e.attempt === 1 && !firsts.has(e.requestId)) {
      firsts.add(e.requestId);
      if (firsts.size > 1000) firsts.delete(firsts.values().next().value);
      budgetWin.call(now());
    }
    if (e.type === 'breaker' && !e.requestId) {
      log.unshift(`${e.key}: ${e.from} → ${e.to}`);
      log.length = Math.min(log.length, MAX_LOG);
    }
    if (e.type === 'wait' && e.key !== undefined) holds.set(e.key, { reason: e.reason, until: now() + (e.delayMs ?? 0) });
    if (e.requestId) {
      let call = calls.get(e.requestId);
      if (!call) {
        call = { id: e.requestId, method: e.method, url: e.url, steps: [] };
        calls.set(e.requestId, call);
        if (calls.size > MAX_CALLS) calls.delete(calls.keys().next().value);
      }
      call.method ??= e.method;
      call.url ??= e.url;
      call.steps.push(e);
    }
    schedule();
  };
  const offs = EVENTS.map((t) => client.on(t, onEvent));

  let pending = false;
  function schedule() {
    if (pending) return;
    pending = true;
    queueMicrotask(() => {
      pending = false;
      render();
    });
  }

  let closed = false;
  function render() {
    if (closed) return;
    let stats, breakers;
    try {
      stats = client.stats();
      breakers = client.breakers();
    } catch {
      // A closed client: keep the last picture.
      return;
    }
    sampleRetries(stats);
    const t = now();
    for (const [k, h] of holds) if (h.until <= t) holds.delete(k);

    const parts = [];
    parts.push(el('h4', {}, 'Breakers'));
    if (!breakers.length) parts.push(el('div', { class: 'sg-none' }, 'none yet'));
    else {
      parts.push(el('table', {}, ...breakers.map((b) => el('tr', { 'data-sg-breaker': b.key, 'data-state': b.state },
        el('td', {}, b.key),
        el('td', { 'data-state': b.state }, b.state),
        el('td', {}, `${b.samples} samples, ${Math.round(b.failureRate * 100)} % failed`),
        el('td', { 'data-sg-next-probe': b.state === 'open' ? Math.ceil(b.openForMs) : '' },
          b.state === 'open' ? `probe in ${secs(b.openForMs)}` : b.state === 'half-open' ? 'probing' : '')))));
    }
    parts.push(el('h4', {}, 'Retries and budget'));
    parts.push(el('table', {}, el('tr', {},
      ...[['requests', stats.requests], ['attempts', stats.attempts], ['retries', stats.retries],
        ['budgetDenied', stats.budgetDenied], ['amplification', stats.amplification.toFixed(2)]]
        .map(([k, v]) => el('td', { 'data-sg-stat': k }, `${k} ${v}`)))));
    if (!budgetWin) parts.push(el('div', { 'data-sg-budget': 'off' }, 'budget off'));
    else {
      const b = budgetWin.read(t);
      parts.push(el('div', {
        'data-sg-budget': b.next ? 'open' : 'spent', 'data-used': b.used, 'data-allowed': b.allowed, 'data-calls': b.calls,
      }, `budget ≈ ${b.used} / ${b.allowed} retries used in ${secs(b.windowMs)} (${b.calls} calls)`,
      b.next ? '' : ' · next retry denied'));
    }
    parts.push(el('h4', {}, 'Queue'));
    parts.push(el('table', {}, el('tr', {},
      ...[['inFlight', stats.inFlight], ['queued', stats.queued], ['queueRejected', stats.queueRejected]]
        .map(([k, v]) => el('td', { 'data-sg-stat': k }, `${k} ${v}`)))));
    parts.push(el('h4', {}, 'Holds'));
    if (!holds.size) parts.push(el('div', { class: 'sg-none' }, 'none'));
    else {
      parts.push(el('table', {}, ...[...holds].map(([k, h]) => el('tr', { 'data-sg-hold': k, 'data-reason': h.reason },
        el('td', {}, k), el('td', {}, h.reason), el('td', {}, `${secs(h.until - t)} left`)))));
    }
    parts.push(el('h4', {}, 'Last calls'));
    if (!calls.size) parts.push(el('div', { class: 'sg-none' }, 'none yet'));
    else {
      const rows = [...calls.values()].reverse().map((c) => {
        const attempts = c.steps.filter((s) => s.type === 'attempt').length;
        return el('tr', { 'data-sg-call': c.id, 'data-outcome': outcome(c), 'data-attempts': attempts },
          el('td', {}, `${c.method ?? ''} ${c.url ?? ''}`), el('td', {}, outcome(c)), el('td', {}, describe(c)));
      });
      parts.push(el('table', {}, ...rows));
    }
    if (log.length) {
      parts.push(el('h4', {}, 'Breaker changes with time'));
      parts.push(el('div', {}, ...log.map((l) => el('div', {}, l))));
    }
    body.replaceChildren(...parts);
  }

  const timer = setInterval(render, TICK_MS);
  render();
  return function unmount() {
    if (closed) return;
    closed = true;
    clearInterval(timer);
    for (const off of offs) off();
    root.remove();
  };
}
