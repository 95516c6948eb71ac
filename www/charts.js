// Time-series charts drawn on <canvas> by hand (no chart library).
//
// drawChart(canvas, {
//   from, to,                 // x range: seconds (server clock), `to` exclusive
//   series: [{ values: (sec) => number|null, color, width?, fill?, dash?, stack? }],
//   yMin?, yMax?,             // default 0 .. a round number above the data
//   format?: (y) => string,   // y-axis labels
//   bands: [{ from, to, color }],   // shaded time ranges (faults)
//   lines: [{ values: (sec) => number|null, color, dash }],   // reference lines (capacity, ceilings)
//   empty?: string,           // message drawn when there is nothing to show
// })

const FONT = '11px system-ui, sans-serif';

function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function sizeCanvas(canvas) {
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(50, Math.round(canvas.clientWidth));
  const h = Math.max(50, Math.round(canvas.clientHeight));
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return { ctx, w, h };
}

export function drawChart(canvas, opt) {
  const { ctx, w, h } = sizeCanvas(canvas);
  const { from, to } = opt;
  const format = opt.format ?? ((y) => String(Math.round(y)));
  const pad = { l: 44, r: 8, t: 8, b: 18 };
  const pw = w - pad.l - pad.r;
  const ph = h - pad.t - pad.b;
  ctx.clearRect(0, 0, w, h);

  // data range (stacked series add up)
  let top = 0;
  const stackSum = new Map();
  for (let s = from; s < to; s++) {
    let stacked = 0;
    for (const ser of opt.series) {
      const v = ser.values(s);
      if (v == null || !Number.isFinite(v)) continue;
      if (ser.stack) {
        stacked += v;
        top = Math.max(top, stacked);
      } else top = Math.max(top, v);
    }
    stackSum.set(s, stacked);
    for (const line of opt.lines ?? []) {
      const v = line.values(s);
      if (v != null && Number.isFinite(v) && !line.noScale) top = Math.max(top, v);
    }
  }
  const yMin = opt.yMin ?? 0;
  const yMax = opt.yMax ?? niceMax(top * 1.08);
  const x = (sec) => pad.l + ((sec - from) / (to - from)) * pw;
  const y = (v) => pad.t + ph - ((Math.min(Math.max(v, yMin), yMax) - yMin) / (yMax - yMin)) * ph;

  // fault bands
  for (const b of opt.bands ?? []) {
    const x0 = Math.max(pad.l, x(b.from));
    const x1 = Math.min(pad.l + pw, x(b.to));
    if (x1 <= x0) continue;
    ctx.fillStyle = b.color;
    ctx.fillRect(x0, pad.t, x1 - x0, ph);
  }

  // grid and y labels
  ctx.font = FONT;
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'right';
  for (let i = 0; i <= 4; i++) {
    const v = yMin + ((yMax - yMin) * i) / 4;
    const yy = Math.round(y(v)) + 0.5;
    ctx.strokeStyle = i === 0 ? '#aab1bd' : '#e4e7ec';
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(pad.l, yy);
    ctx.lineTo(pad.l + pw, yy);
    ctx.stroke();
    ctx.fillStyle = '#6b7280';
    ctx.fillText(format(v), pad.l - 5, yy);
  }
  // x labels: seconds before now
  ctx.textAlign = 'center';
  ctx.textBaseline = 'alphabetic';
  const span = to - from;
  const step = span > 90 ? 30 : span > 40 ? 15 : 10;
  for (let ago = 0; ago <= span; ago += step) {
    const xx = x(to - ago);
    ctx.fillStyle = '#6b7280';
    ctx.fillText(ago === 0 ? 'now' : `-${ago} s`, Math.min(Math.max(xx, pad.l + 10), pad.l + pw - 12), h - 4);
  }

  // stacked areas first (bottom up), then lines
  const base = new Map();
  for (const ser of opt.series.filter((s) => s.stack)) {
    ctx.beginPath();
    let started = false;
    const pts = [];
    for (let s = from; s < to; s++) {
      const v = ser.values(s);
      if (v == null) continue;
      const b0 = base.get(s) ?? 0;
      pts.push([s, b0, b0 + v]);
      base.set(s, b0 + v);
    }
    if (!pts.length) continue;
    for (const [s, , top1] of pts) {
      const xx = x(s + 0.5);
      if (!started) {
        ctx.moveTo(xx, y(top1));
        started = true;
      } else ctx.lineTo(xx, y(top1));
    }
    for (let i = pts.length - 1; i >= 0; i--) ctx.lineTo(x(pts[i][0] + 0.5), y(pts[i][1]));
    ctx.closePath();
    ctx.fillStyle = ser.color;
    ctx.fill();
  }

  for (const line of opt.lines ?? []) {
    // a reference line above the data's scale (noScale) is left out rather than drawn at the top edge
    const inRange = line.noScale ? { ...line, values: (s) => { const v = line.values(s); return v != null && v <= yMax ? v : null; } } : line;
    drawPath(ctx, inRange, from, to, x, y, { width: 1.25, dash: line.dash ?? [5, 4] });
  }
  for (const ser of opt.series.filter((s) => !s.stack)) {
    if (ser.fill) {
      ctx.beginPath();
      let first = null;
      let last = null;
      for (let s = from; s < to; s++) {
        const v = ser.values(s);
        if (v == null || !Number.isFinite(v)) continue;
        const xx = x(s + 0.5);
        if (first === null) {
          ctx.moveTo(xx, y(yMin));
          first = xx;
        }
        ctx.lineTo(xx, y(v));
        last = xx;
      }
      if (first !== null) {
        ctx.lineTo(last, y(yMin));
        ctx.closePath();
        ctx.fillStyle = ser.fill;
        ctx.fill();
      }
    }
    drawPath(ctx, ser, from, to, x, y, { width: ser.width ?? 2, dash: ser.dash ?? [] });
  }

  const hasData = opt.series.some((ser) => {
    for (let s = from; s < to; s++) if (ser.values(s) != null) return true;
    return false;
  });
  if (!hasData || opt.empty) {
    ctx.fillStyle = '#6b7280';
    ctx.font = '13px system-ui, sans-serif';
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    ctx.fillText(opt.empty ?? 'waiting for data…', pad.l + pw / 2, pad.t + ph / 2);
  }
}

function drawPath(ctx, ser, from, to, x, y, { width, dash }) {
  ctx.beginPath();
  ctx.setLineDash(dash);
  ctx.lineWidth = width;
  ctx.strokeStyle = ser.color;
  ctx.lineJoin = 'round';
  let pen = false;
  for (let s = from; s < to; s++) {
    const v = ser.values(s);
    if (v == null || !Number.isFinite(v)) {
      pen = false;
      continue;
    }
    const xx = x(s + 0.5);
    if (!pen) ctx.moveTo(xx, y(v));
    else ctx.lineTo(xx, y(v));
    pen = true;
  }
  ctx.stroke();
  ctx.setLineDash([]);
}
