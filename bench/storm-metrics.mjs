// The storm's metrics (bench/README.md: amplification, peak load, recovery, success, probe load), from one run's records.
// Pure functions; every time is ms since the run's start.
//
// calls:    [client, start, end, ok, errorName] per logical call
// arrivals: server arrival times of every request (the server's log, moved to this clock)

const SEC = 1000;
const STEP = 100; // recovery: 1 s windows sliding by 100 ms

function countIn(sortedTimes, from, to) {
  return lowerBound(sortedTimes, to) - lowerBound(sortedTimes, from);
}
function lowerBound(a, x) {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function analyzeStorm({ calls, arrivals, faultStart, faultEnd, runEnd, deadlineMs }) {
  const arr = Float64Array.from(arrivals).sort();
  // a call succeeded when it resolved with data within the deadline
  const good = (c) => c[3] && c[2] - c[1] <= deadlineMs;
  const byStart = calls.slice().sort((x, y) => x[1] - y[1]);
  const starts = Float64Array.from(byStart, (c) => c[1]);
  const okPrefix = new Int32Array(byStart.length + 1);
  byStart.forEach((c, i) => (okPrefix[i + 1] = okPrefix[i] + (good(c) ? 1 : 0)));
  const callsIn = (from, to) => {
    const i = lowerBound(starts, from);
    const j = lowerBound(starts, to);
    return { n: j - i, ok: okPrefix[j] - okPrefix[i] };
  };

  // baseline: server arrivals per second over the warm-up, its first second left out
  const baseFrom = Math.max(SEC, faultStart - 5 * SEC);
  const baselineRate = (countIn(arr, baseFrom, faultStart) / (faultStart - baseFrom)) * SEC;

  // amplification: server arrivals in the fault window / logical calls started in it
  const faultCalls = callsIn(faultStart, faultEnd);
  const amplification = countIn(arr, faultStart, faultEnd) / faultCalls.n;

  // peak: the busiest 1 s window (aligned to the fault start) from the fault on
  let peakRate = 0;
  let peakAt = faultStart;
  for (let t = faultStart; t + SEC <= runEnd + 1e-6; t += SEC) {
    const r = countIn(arr, t, t + SEC);
    if (r > peakRate) {
      peakRate = r;
      peakAt = t;
    }
  }

  // recovery: from the fault's end until every following 1 s window (calls by start time) has success >= 0.99
  let lastBad = -Infinity;
  for (let t = faultEnd; t + SEC <= runEnd + 1e-6; t += STEP) {
    const w = callsIn(t, t + SEC);
    if (w.n > 0 && w.ok / w.n < 0.99) lastBad = t;
  }
  let recoveryMs;
  if (lastBad === -Infinity) recoveryMs = 0;
  else if (lastBad + STEP + SEC > runEnd + 1e-6) recoveryMs = null; // never, within the run
  else recoveryMs = lastBad + STEP - faultEnd;

  const fromFault = callsIn(faultStart, Infinity);
  const inFault = callsIn(faultStart, faultEnd);
  const afterFault = callsIn(faultEnd, Infinity);
  const warm = callsIn(0, faultStart);

  // 1 s series for the charts, t = seconds from the fault's start
  const series = [];
  for (let t = faultStart - Math.floor(faultStart / SEC) * SEC; t + SEC <= runEnd + 1e-6; t += SEC) {
    const w = callsIn(t, t + SEC);
    series.push({
      t: Math.round((t - faultStart) / SEC),
      arrivals: countIn(arr, t, t + SEC),
      calls: w.n,
      success: w.n ? w.ok / w.n : null,
    });
  }

  const okLatency = byStart.filter((c) => c[1] >= faultStart && good(c)).map((c) => c[2] - c[1]).sort((x, y) => x - y);
  return {
    faultStartMs: faultStart,
    faultEndMs: faultEnd,
    runEndMs: runEnd,
    logicalCalls: calls.length,
    baselineRate,
    amplification,
    peakRate,
    peakRatio: peakRate / baselineRate,
    peakAtS: (peakAt - faultStart) / SEC,
    recoveryMs,
    successFromFault: fromFault.ok / fromFault.n,
    successInFault: inFault.ok / inFault.n,
    successAfterFault: afterFault.ok / afterFault.n,
    successWarmup: warm.ok / warm.n,
    okLatencyP50Ms: okLatency.length ? okLatency[Math.floor(okLatency.length / 2)] : null,
    okLatencyP99Ms: okLatency.length ? okLatency[Math.min(okLatency.length - 1, Math.ceil(0.99 * okLatency.length) - 1)] : null,
    series,
  };
}
