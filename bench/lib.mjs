// Small helpers shared by the benchmark modules: paths, statistics, child
// processes, formatting. Node only.
import { spawn } from 'node:child_process';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const benchDir = dirname(fileURLToPath(import.meta.url));
export const root = join(benchDir, '..');
export const buildDir = join(benchDir, '.build');
export const resultsDir = join(benchDir, 'results');

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function quantile(sorted, q) {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}
export function summarize(values) {
  const s = Float64Array.from(values).sort();
  const sum = s.reduce((a, b) => a + b, 0);
  return {
    n: s.length,
    median: quantile(s, 0.5),
    p90: quantile(s, 0.9),
    p99: quantile(s, 0.99),
    mean: s.length ? sum / s.length : NaN,
    min: s[0],
    max: s[s.length - 1],
  };
}
export const median = (values) => summarize(values).median;

export const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
export const fixed = (n, d = 2) => (Number.isFinite(n) ? n.toFixed(d) : '—');
export const pct = (n, d = 1) => (Number.isFinite(n) ? `${(100 * n).toFixed(d)} %` : '—');

/** A markdown table from a header row and rows of cells. */
export function mdTable(head, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

/** A plain-text table for the terminal. */
export function textTable(head, rows) {
  const all = [head, ...rows].map((r) => r.map(String));
  const w = head.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  const line = (r) => r.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join('  ');
  return [line(all[0]), w.map((n) => '-'.repeat(n)).join('  '), ...all.slice(1).map(line)].join('\n');
}

/**
 * Starts `node script args` with an IPC channel; resolves with the child and
 * its first message (the script's "ready" report).
 */
export function forkNode(script, args = [], { execArgv = [], env } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...execArgv, script, ...args], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: env ? { ...process.env, ...env } : process.env,
    });
    const onExit = (code) => reject(new Error(`${script} exited with ${code} before it was ready`));
    child.once('exit', onExit);
    child.once('error', reject);
    child.once('message', (m) => {
      child.off('exit', onExit);
      resolve({ child, ready: m });
    });
  });
}

/** Sends one request message to a child and waits for the answer of the same type. */
export function ask(child, type, payload = {}) {
  // a child that is gone would never answer, nor exit again: fail at once
  if (!child.connected) return Promise.reject(new Error(`child gone before it could answer ${type}`));
  return new Promise((resolve, reject) => {
    const onMsg = (m) => {
      if (m && m.type === type) {
        child.off('message', onMsg);
        child.off('exit', onExit);
        if (m.error) reject(new Error(m.error));
        else resolve(m);
      }
    };
    const onExit = (code) => {
      child.off('message', onMsg);
      reject(new Error(`child exited with ${code} while answering ${type}`));
    };
    child.on('message', onMsg);
    child.once('exit', onExit);
    child.send({ type, ...payload });
  });
}

export function waitExit(child) {
  return child.exitCode !== null ? Promise.resolve(child.exitCode) : new Promise((r) => child.once('exit', r));
}

/**
 * CPU time of the whole machine so far, for busyCoresSince: at normal priority (`busy`) and at a
 * raised nice value (`niced`: background work such as builds started with `nice`, which the
 * scheduler preempts for the benchmark's processes, so it does not take their CPU).
 */
export function cpuSnapshot() {
  let busy = 0;
  let niced = 0;
  for (const c of os.cpus()) {
    busy += c.times.user + c.times.sys + c.times.irq;
    niced += c.times.nice;
  }
  return { busy, niced, at: performance.now() };
}
/** Cores the whole machine kept busy at normal priority since a snapshot (and `niced`: at low priority). */
export function busyCoresSince(snap) {
  const now = cpuSnapshot();
  const span = now.at - snap.at;
  return Object.assign((now.busy - snap.busy) / span, { niced: (now.niced - snap.niced) / span });
}
