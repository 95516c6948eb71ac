//! Probe-first retries (README, "breaker.consecutiveFailures"): a call to a key held
//! by its origin's burst (see `breaker/origin.rs`) waits for the origin's
//! probe instead of sending. While the probe is out it waits in its key's
//! queue ([`Admission::AwaitProbe`], the half-open hold's machinery); before
//! the probe's time (when a retry of the burst would typically go) it waits
//! that long ([`Admission::Wait`], never announced); when neither, it asks
//! `acquire` and goes as the probe. Each probe that failed while the call
//! was held counts as one of its own failed attempts, nothing sent: when
//! its attempts run out it ends with `CircuitOpenError`. Once the burst is
//! over (its probe succeeded), a call that was held goes after a wait drawn
//! over its backoff window, so that a probe that succeeded by chance
//! releases no herd; its retry was granted by the budget when it was
//! planned.

use super::*;
use crate::policy::options::Jitter;

impl Guard {
    /// What a burst decides for the call before its breaker is asked;
    /// None: ask the breaker as usual.
    pub(super) fn burst_admission(
        &mut self,
        c: &mut CallState,
        now: f64,
        max_wait: f64,
        rand01: f64,
    ) -> Option<Admission> {
        let b = self.breakers.as_mut()?;
        let Some(burst) = b.burst(&c.spec.key, now) else {
            // Released from a burst that ended: spread over the window
            // (unless the key's own breaker decides for it now).
            c.burst.take()?;
            if b.state(&c.spec.key, now) != BreakerState::Closed {
                return None;
            }
            let n = c.spent();
            let window = Backoff::new(c.retry.base_delay_ms, c.retry.max_delay_ms, Jitter::None)
                .delay(n, 0.0);
            let ms = (rand01 * window).min(c.deadline.remaining(now));
            return (ms > 0.0 && max_wait > 0.0).then_some(Admission::Wait {
                ms,
                why: Why::Burst,
                announce: false,
            });
        };
        let seen = match c.burst {
            Some((run, seen)) if run == burst.run => seen,
            _ => burst.lost,
        };
        let lost = burst.lost.saturating_sub(seen);
        c.burst = Some((burst.run, burst.lost));
        if lost > 0 {
            c.lost = c.lost.saturating_add(lost);
            let spent = c.spent();
            if spent >= c.retry.max_attempts.max(1) {
                return Some(Admission::Stop(Stop::CircuitOpen {
                    retry_in_ms: burst.probe_in_ms,
                }));
            }
        }
        if !burst.probing && burst.probe_in_ms <= 0.0 {
            // It goes as the probe: its own failure is no lost attempt.
            c.burst = Some((burst.run, burst.lost.saturating_add(1)));
            return None;
        }
        if max_wait <= 0.0 {
            // schema(): its cache answers at once.
            return Some(Admission::Stop(Stop::CircuitOpen {
                retry_in_ms: burst.probe_in_ms,
            }));
        }
        if burst.probing {
            return b.wait(&c.spec.key).map(Admission::AwaitProbe);
        }
        Some(Admission::Wait {
            ms: burst.probe_in_ms.min(max_wait),
            why: Why::Burst,
            announce: false,
        })
    }
}
