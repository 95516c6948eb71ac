//! The half-open hold's waits (README, "breaker.halfOpenProbes"):
//! a call that the policy core holds while its key's probe is out waits
//! for the probe's outcome, within its deadline and abortable, then asks
//! again (see `src/policy/guard/halfopen.rs`, which decides everything);
//! and the probe itself waits, the same way, for another tab's probe.

use super::call::Call;
use super::driver::{Halt, Probed};
use super::engine::Engine;
use super::host::now_ms;
use super::runtime::{Apart, Gate, Wake};
use crate::policy::breaker::{Permit, ProbeWaiter};
use crate::policy::guard::CallState;

impl Engine {
    /// Waits for the probe's outcome (`Ok(true)`: the call is released and
    /// asks the core again) for at most `cap` ms (`Ok(false)`), within the
    /// call's deadline and until it is cancelled (`Err`). Unless released,
    /// it leaves the key's queue.
    pub(super) async fn await_probe(
        &self,
        call: &Call,
        c: &CallState<'_>,
        id: ProbeWaiter,
        cap: f64,
    ) -> Result<bool, Halt> {
        let gate = Gate::new();
        self.park_probe_wait(id, gate.clone());
        let left = c.deadline.remaining(now_ms());
        let wake = call.cancel.wait_on(&gate, cap.min(left)).await;
        if matches!(wake, Wake::Timer | Wake::Cancelled) {
            self.unpark_probe_wait(c, id);
        }
        match wake {
            Wake::Cancelled => Err(call.cancel.abort_error().into()),
            Wake::Timer if cap < left => Ok(false),
            Wake::Timer => Err(Halt::OutOfTime),
            _ => Ok(true),
        }
    }

    /// One half-open probe across all tabs. A call whose probe permit
    /// meets another tab's probe (the cross-tab lock is taken) keeps the
    /// permit, so this tab's other calls wait behind it, and waits itself
    /// in the key's queue for that tab's news (its probe's outcome closes
    /// or opens the key here: [`Probed::Again`]), looking at the lock again
    /// every [`RECHECK_MS`]: once that tab let go without news (it closed,
    /// its probe decided nothing) and [`GRACE_MS`] more brought none, this
    /// call probes. Every wait ends on abort and deadline too.
    pub(super) async fn probe_lock(
        &self,
        call: &Call,
        c: &CallState<'_>,
        permit: Option<Permit>,
    ) -> Result<Probed, Halt> {
        let (Some(Permit::Probe), Some(x)) = (permit, self.crosstab.get()) else {
            return Ok(Probed::Go(None));
        };
        let mut waited = false;
        loop {
            let left = c.deadline.remaining(now_ms());
            let lock = match call
                .cancel
                .within(left, std::pin::pin!(x.probe_lock(&call.spec.key)))
                .await
            {
                Ok(lock) => lock,
                Err(Wake::Cancelled) => Err(call.cancel.abort_error())?,
                Err(_) => Err(Halt::OutOfTime)?,
            };
            if lock.is_some() && !waited {
                return Ok(Probed::Go(lock));
            }
            // Not half-open any more: that tab's news came meanwhile.
            let watched = self.st.borrow_mut().guard.watch_probe(c);
            let Some(id) = watched else {
                return Ok(Probed::Again);
            };
            // With the lock: a moment for that tab's news, which was sent
            // before it let go, on another channel (not ordered with it).
            let cap = if lock.is_some() { GRACE_MS } else { RECHECK_MS };
            if Apart(self.await_probe(call, c, id, cap)).await? {
                return Ok(Probed::Again);
            }
            if lock.is_some() {
                return Ok(Probed::Go(lock));
            }
            waited = true;
        }
    }
}

/// How often a call waiting for another tab's probe looks at its lock.
const RECHECK_MS: f64 = 250.0;

/// How long a call that waited for another tab's probe lock, once it has
/// it, waits for that tab's news before it probes itself.
const GRACE_MS: f64 = 50.0;
