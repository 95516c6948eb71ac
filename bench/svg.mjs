// Minimal SVG charts for RESULTS.md: line charts (time series) and horizontal
// bar charts (optionally stacked, with a reference line). No dependencies.

export const COLORS = {
  raw: '#7f7f7f',
  none: '#7f7f7f',
  naive: '#d62728',
  ky: '#ff7f0e',
  cockatiel: '#9467bd',
  stormguard: '#1f77b4',
  ofetch: '#2ca02c',
  axios: '#8c564b',
  'stormguard-bare': '#9ecae1',
  'stormguard-proposed': '#17becf',
  'stormguard-adaptive': '#bcbd22',
  'stormguard-minRetries1': '#bcbd22',
  'stormguard-consecutive5': '#e377c2',
  'stormguard-maxOpen8000': '#2ca02c',
  'stormguard-maxOpen30000': '#8c564b',
  'stormguard-probes2': '#17becf',
};
const PALETTE = ['#1f77b4', '#17becf', '#bcbd22', '#e377c2', '#2ca02c', '#8c564b'];
export const colorOf = (name, i = 0) => COLORS[name] ?? PALETTE[i % PALETTE.length];

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const num = (n) => (Math.round(n * 10) / 10).toString();

/** A "nice" tick step for a range. */
function niceStep(range, ticks) {
  const raw = range / ticks;
  const p = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 2.5, 5, 10].map((m) => m * p).find((s) => s >= raw) ?? raw;
}
const fmtTick = (v) => (Math.abs(v) >= 100 || Number.isInteger(v) ? String(Math.round(v)) : v.toFixed(v < 1 ? 2 : 1).replace(/\.?0+$/, ''));

function frame(width, height, title, body) {
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ` +
    `font-family="system-ui, -apple-system, 'Segoe UI', sans-serif" font-size="12">\n` +
    `<rect width="${width}" height="${height}" fill="#fff"/>\n` +
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="14" font-weight="600">${esc(title)}</text>\n${body}</svg>\n`;
}

/**
 * @param {{ title: string, series: { name: string, color?: string, points: [number, number|null][] }[],
 *   xLabel?: string, yLabel?: string, shade?: [number, number, string?], yMin?: number, yMax?: number,
 *   hLines?: { y: number, label: string }[], width?: number, height?: number }} o
 */
export function lineChart({ title, series, xLabel = '', yLabel = '', shade, yMin = 0, yMax, hLines = [], width = 800, height = 320 }) {
  const m = { l: 56, r: 190, t: 34, b: 44 };
  const W = width - m.l - m.r;
  const H = height - m.t - m.b;
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = series.flatMap((s) => s.points.map((p) => p[1])).filter((y) => y !== null && Number.isFinite(y));
  const x0 = Math.min(...xs);
  const x1 = Math.max(...xs);
  const top = yMax ?? Math.max(...ys, ...hLines.map((h) => h.y)) * 1.08;
  const X = (x) => m.l + ((x - x0) / (x1 - x0 || 1)) * W;
  const Y = (y) => m.t + H - ((y - yMin) / (top - yMin || 1)) * H;
  let body = '';
  if (shade) {
    body += `<rect x="${num(X(shade[0]))}" y="${m.t}" width="${num(X(shade[1]) - X(shade[0]))}" height="${H}" fill="#f4d7d7" opacity="0.6"/>\n`;
    if (shade[2]) body += `<text x="${num((X(shade[0]) + X(shade[1])) / 2)}" y="${m.t + 14}" text-anchor="middle" fill="#a33">${esc(shade[2])}</text>\n`;
  }
  const ys1 = niceStep(top - yMin, 5);
  for (let v = Math.ceil(yMin / ys1) * ys1; v <= top + 1e-9; v += ys1) {
    body += `<line x1="${m.l}" x2="${m.l + W}" y1="${num(Y(v))}" y2="${num(Y(v))}" stroke="#e5e5e5"/>` +
      `<text x="${m.l - 6}" y="${num(Y(v) + 4)}" text-anchor="end" fill="#555">${fmtTick(v)}</text>\n`;
  }
  const xs1 = niceStep(x1 - x0, 10);
  for (let v = Math.ceil(x0 / xs1) * xs1; v <= x1 + 1e-9; v += xs1) {
    body += `<line x1="${num(X(v))}" x2="${num(X(v))}" y1="${m.t + H}" y2="${m.t + H + 4}" stroke="#555"/>` +
      `<text x="${num(X(v))}" y="${m.t + H + 16}" text-anchor="middle" fill="#555">${fmtTick(v)}</text>\n`;
  }
  body += `<line x1="${m.l}" x2="${m.l + W}" y1="${m.t + H}" y2="${m.t + H}" stroke="#555"/>\n`;
  body += `<line x1="${m.l}" x2="${m.l}" y1="${m.t}" y2="${m.t + H}" stroke="#555"/>\n`;
  for (const h of hLines) {
    body += `<line x1="${m.l}" x2="${m.l + W}" y1="${num(Y(h.y))}" y2="${num(Y(h.y))}" stroke="#333" stroke-dasharray="4 3"/>` +
      `<text x="${m.l + W - 4}" y="${num(Y(h.y) - 4)}" text-anchor="end" fill="#333">${esc(h.label)}</text>\n`;
  }
  series.forEach((s, i) => {
    const color = s.color ?? colorOf(s.name, i);
    let d = '';
    let pen = false;
    for (const [x, y] of s.points) {
      if (y === null || !Number.isFinite(y)) {
        pen = false;
        continue;
      }
      d += `${pen ? 'L' : 'M'}${num(X(x))},${num(Y(Math.min(y, top)))}`;
      pen = true;
    }
    body += `<path d="${d}" fill="none" stroke="${color}" stroke-width="${s.name === 'stormguard' ? 2.5 : 1.6}"${s.dash ? ' stroke-dasharray="5 3"' : ''}/>\n`;
    body += `<line x1="${m.l + W + 12}" x2="${m.l + W + 32}" y1="${m.t + 10 + i * 18}" y2="${m.t + 10 + i * 18}" stroke="${color}" stroke-width="2.5"${s.dash ? ' stroke-dasharray="5 3"' : ''}/>` +
      `<text x="${m.l + W + 38}" y="${m.t + 14 + i * 18}">${esc(s.name)}</text>\n`;
  });
  body += `<text x="${m.l + W / 2}" y="${height - 8}" text-anchor="middle" fill="#333">${esc(xLabel)}</text>\n`;
  body += `<text transform="translate(14 ${m.t + H / 2}) rotate(-90)" text-anchor="middle" fill="#333">${esc(yLabel)}</text>\n`;
  return frame(width, height, title, body);
}

/**
 * Horizontal bars; a bar may be stacked from `segments` ({ label, value, color }).
 * @param {{ title: string, bars: { label: string, value?: number, color?: string, segments?: any[], note?: string }[],
 *   unit?: string, ref?: { value: number, label: string }, width?: number, digits?: number }} o
 */
export function barChart({ title, bars, unit = '', ref, width = 720, digits = 1 }) {
  const m = { l: 150, r: 150, t: 50, b: 30 };
  const rowH = 26;
  const height = m.t + m.b + bars.length * rowH;
  const W = width - m.l - m.r;
  const total = (b) => b.value ?? b.segments.reduce((s, x) => s + x.value, 0);
  const top = Math.max(...bars.map(total), ref ? ref.value : 0) * 1.05 || 1;
  const X = (v) => m.l + (v / top) * W;
  let body = '';
  const step = niceStep(top, 6);
  for (let v = 0; v <= top + 1e-9; v += step) {
    body += `<line x1="${num(X(v))}" x2="${num(X(v))}" y1="${m.t - 4}" y2="${m.t + bars.length * rowH}" stroke="#eee"/>` +
      `<text x="${num(X(v))}" y="${m.t + bars.length * rowH + 16}" text-anchor="middle" fill="#555">${fmtTick(v)}</text>\n`;
  }
  bars.forEach((b, i) => {
    const y = m.t + i * rowH + 4;
    body += `<text x="${m.l - 8}" y="${y + 13}" text-anchor="end">${esc(b.label)}</text>\n`;
    const segs = b.segments ?? [{ value: b.value, color: b.color ?? colorOf(b.label.split(' ')[0], i) }];
    let x = 0;
    for (const s of segs) {
      body += `<rect x="${num(X(x))}" y="${y}" width="${num(Math.max(0.5, X(x + s.value) - X(x)))}" height="${rowH - 8}" fill="${s.color}">` +
        `<title>${esc(`${s.label ?? b.label}: ${s.value.toFixed(digits)} ${unit}`)}</title></rect>\n`;
      x += s.value;
    }
    body += `<text x="${num(X(x) + 6)}" y="${y + 13}" fill="#333">${esc(`${total(b).toFixed(digits)} ${unit}${b.note ? ` ${b.note}` : ''}`)}</text>\n`;
  });
  if (ref) {
    body += `<line x1="${num(X(ref.value))}" x2="${num(X(ref.value))}" y1="${m.t - 8}" y2="${m.t + bars.length * rowH}" stroke="#d62728" stroke-dasharray="4 3"/>` +
      `<text x="${num(X(ref.value) + 4)}" y="${m.t - 12}" fill="#d62728">${esc(ref.label)}</text>\n`;
  }
  const legend = [...new Map(bars.flatMap((b) => b.segments ?? []).filter((s) => s.label).map((s) => [s.label, s.color])).entries()];
  legend.forEach(([label, color], i) => {
    body += `<rect x="${width - 60}" y="${m.t + i * 18}" width="12" height="12" fill="${color}"/>` +
      `<text x="${width - 44}" y="${m.t + 10 + i * 18}">${esc(label)}</text>\n`;
  });
  return frame(width, height, title, body);
}

/**
 * Charts side by side under one title (small multiples): each panel is the SVG text of a chart made
 * above, nested at its place.
 * @param {{ title: string, panels: string[], cols?: number }} o
 */
export function panelChart({ title, panels, cols = panels.length }) {
  const size = (svg) => {
    const m = /^<svg [^>]*width="(\d+)" height="(\d+)"/.exec(svg);
    return m ? [Number(m[1]), Number(m[2])] : [800, 320];
  };
  const sizes = panels.map(size);
  const w = Math.max(...sizes.map((s) => s[0]));
  const h = Math.max(...sizes.map((s) => s[1]));
  const rows = Math.ceil(panels.length / cols);
  const top = 30;
  let body = '';
  panels.forEach((svg, i) => {
    const x = (i % cols) * w;
    const y = top + Math.floor(i / cols) * h;
    body += svg.replace(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" /, `<svg x="${x}" y="${y}" `);
  });
  return frame(cols * w, top + rows * h, title, body);
}
