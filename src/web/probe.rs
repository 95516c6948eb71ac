//! The half-open hold's waits (API.md, "Breaker", revised 2026-12-02):
//! a call that the policy core holds while its key's probe is out waits
//! for the probe's outcome, within its deadline and abortable, then asks
//! again (see `src/policy/guard/halfopen.rs`, which decides everything).

use super::call::Call;
use super::crosstab::ProbeLock;
use super::driver::Halt;
use super::engine::Engine;
use super::errors::{CallError, ErrorKind};
use super::host::now_ms;
use super::runtime::{Gate, Wake};
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

    /// One half-open probe across all tabs: the others stay open. The
    /// lock may answer late: the wait ends on abort and deadline too.
    pub(super) async fn probe_lock(
        &self,
        call: &Call,
        c: &CallState<'_>,
        permit: Option<Permit>,
    ) -> Result<Option<ProbeLock>, Halt> {
        let (Some(Permit::Probe), Some(x)) = (permit, self.crosstab.get()) else {
            return Ok(None);
        };
        let left = c.deadline.remaining(now_ms());
        match call.cancel.within(left, x.probe_lock(&call.spec.key)).await {
            Ok(Some(lock)) => Ok(Some(lock)),
            Ok(None) => Err(CallError::new(ErrorKind::CircuitOpen {
                key: call.spec.key.clone(),
                retry_in_ms: 0.0,
            })
            .into()),
            Err(Wake::Cancelled) => Err(call.cancel.abort_error().into()),
            Err(_) => Err(Halt::OutOfTime),
        }
    }
}
