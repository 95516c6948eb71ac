//! Admission and its waits: the call asks the policy core until it may
//! send, waiting as it says (for the host to come online, out a hold, for
//! a half-open probe's outcome), then takes a concurrency slot.
//!
//! The half-open hold's waits (README, "breaker.halfOpenProbes"): a call
//! that the policy core holds while its key's probe is out waits for the
//! probe's outcome, within its deadline and abortable, then asks again
//! (see `src/policy/guard/halfopen.rs`, which decides everything); and the
//! probe itself waits, the same way, for another tab's probe (the
//! cross-tab probe lock, [`CrossProbe`]).

use wasm_bindgen::JsValue;

use super::{Drive, Halt};
use crate::policy::breaker::{Permit, ProbeWaiter};
use crate::policy::classify::RetryDenied;
use crate::policy::guard::{Admission, Phase, Stop};
use crate::policy::limiter::Acquire;
use crate::web::call::Call;
use crate::web::crosstab::{CrossTab, ProbeLock};
use crate::web::errors::{CallError, ErrorKind};
use crate::web::host::{global_target, is_offline, now_ms, rand01};
use crate::web::runtime::{Apart, EventLink, Gate, Wake};

/// What a call holding a half-open probe permit does after asking for
/// the cross-tab probe lock ([`CrossProbe`]).
pub(super) enum Probed {
    /// Send the probe, holding the lock if there is one.
    Go(Option<ProbeLock>),
    /// Another tab's probe decided the key (or a probe permit came back
    /// here): give the permit back and ask again.
    Again,
}

fn circuit_open(call: &Call, retry_in_ms: f64) -> CallError {
    CallError::new(ErrorKind::CircuitOpen {
        key: call.spec.key.clone(),
        retry_in_ms,
    })
}

fn offline_error(denied: Option<RetryDenied>) -> CallError {
    let mut e = CallError::new(ErrorKind::Network {
        cause: JsValue::UNDEFINED,
        offline: true,
    });
    e.retry_denied = denied;
    e
}

impl Drive<'_> {
    /// Asks the policy core until it lets the call go (with its breaker
    /// permit, and the probe lock a half-open probe holds), waiting as it
    /// says: for the host to come online, out a hold, or for a half-open
    /// probe's outcome (here or in another tab).
    pub(super) async fn admission(&mut self) -> Result<(Option<Permit>, Option<ProbeLock>), Halt> {
        let call = self.call;
        loop {
            if call.cancel.is_cancelled() {
                return Err(call.cancel.abort_error().into());
            }
            let admission = self.decide(|g, c| g.admit(c, now_ms(), is_offline(), rand01()));
            // Every wait but the probe lock's is one wait on a gate here:
            // what opens it is set up first (an `online` listener, the
            // probe's queue), and undone after.
            let (gate, ms, online, probe) = match admission {
                Admission::Go(permit) => {
                    // A half-open probe takes the tabs' probe lock first.
                    let probed = match CrossProbe::of(self, permit) {
                        Some(probe) => Apart(probe.take()).await,
                        None => Ok(Probed::Go(None)),
                    };
                    match probed {
                        Ok(Probed::Go(lock)) => return Ok((permit, lock)),
                        // Another tab's probe decided: give the permit back, ask again.
                        Ok(Probed::Again) => self.give_back(permit),
                        Err(halt) => {
                            self.give_back(permit);
                            return Err(halt);
                        }
                    }
                    continue;
                }
                // While the host is offline no attempt is made: the call waits for the
                // `online` event within its deadline (where the host has no event target
                // to listen on, it fails at once with an offline NetworkError).
                Admission::Online => {
                    let Some(target) = global_target() else {
                        return Err(offline_error(None).into());
                    };
                    let gate = Gate::new();
                    let g = gate.clone();
                    let link = EventLink::once(&target, "online", move || g.open(Wake::Done));
                    let ms = self.c.deadline.remaining(now_ms());
                    (gate, ms, Some(link), None)
                }
                Admission::Wait { ms, why, announce } => {
                    if announce {
                        let attempt = self.c.attempts() + 1;
                        self.engine.events().emit_call("wait", call, attempt, &|o| {
                            o.times.delay_ms = Some(ms);
                            o.outcome.reason = Some(why.as_str());
                            o.breaker.key = Some(&call.spec.key);
                        });
                    }
                    (Gate::new(), ms, None, None)
                }
                // Held while the key's probe is out: until its outcome
                // releases the call, within the deadline.
                Admission::AwaitProbe(id) => {
                    let gate = Gate::new();
                    self.engine.park_probe_wait(id, gate.clone());
                    (gate, self.c.deadline.remaining(now_ms()), None, Some(id))
                }
                Admission::Stop(Stop::Deadline) => return Err(Halt::OutOfTime),
                Admission::Stop(Stop::Budget) => return Err(Halt::Denied),
                Admission::Stop(Stop::Offline) => return Err(offline_error(None).into()),
                Admission::Stop(Stop::CircuitOpen { retry_in_ms }) => {
                    return Err(circuit_open(call, retry_in_ms).into())
                }
            };
            let wake = call.cancel.wait_on(&gate, ms).await;
            if let (Some(id), Wake::Timer | Wake::Cancelled) = (probe, wake) {
                self.engine.unpark_probe_wait(&self.c, id);
            }
            match wake {
                Wake::Cancelled => return Err(call.cancel.abort_error().into()),
                Wake::Timer if online.is_some() => {
                    return Err(offline_error(Some(RetryDenied::Deadline)).into())
                }
                Wake::Timer if probe.is_some() => return Err(Halt::OutOfTime),
                _ => {}
            }
        }
    }

    /// Takes a concurrency slot, waiting FIFO if need be. The wait ends at
    /// the deadline or when the call is cancelled.
    pub(super) async fn acquire_slot(&self) -> Result<(), CallError> {
        let (engine, call) = (self.engine, self.call);
        let acquired = engine.acquire_slot();
        let id = match acquired {
            Acquire::Granted => return Ok(()),
            Acquire::Full => return Err(CallError::new(ErrorKind::QueueFull)),
            Acquire::Queued(id) => id,
        };
        let gate = Gate::new();
        engine.park(id, gate.clone());
        let wake = call
            .cancel
            .wait_on(&gate, self.c.deadline.remaining(now_ms()))
            .await;
        if engine.unpark(id, wake == Wake::Granted) {
            // The slot reached us as we gave up: pass it on.
            engine.release_slot();
        }
        match wake {
            Wake::Granted => Ok(()),
            Wake::Timer => Err(CallError::new(ErrorKind::Timeout {
                phase: Phase::Queue,
            })),
            _ => Err(call.cancel.abort_error()),
        }
    }
}

/// One half-open probe across all tabs: a call holding its key's probe
/// permit and the tabs' probe lock it asks for. A call whose permit meets
/// another tab's probe (the lock is taken) keeps the permit, so this tab's
/// other calls wait behind it, and waits itself in the key's queue for that
/// tab's news (its probe's outcome closes or opens the key here:
/// [`Probed::Again`]), looking at the lock again every [`RECHECK_MS`]: once
/// that tab let go without news (it closed, its probe decided nothing) and
/// [`GRACE_MS`] more brought none, this call probes. Every wait ends on
/// abort and deadline too.
struct CrossProbe<'d, 'a> {
    d: &'d Drive<'a>,
    x: &'a CrossTab,
    /// It waited for another tab's probe: when it has the lock, a moment
    /// for that tab's news before it probes.
    waited: bool,
}

impl<'d, 'a> CrossProbe<'d, 'a> {
    /// The probe a call admitted with `permit` sends, if it must take the
    /// tabs' lock first: a half-open probe, with other tabs to ask.
    fn of(d: &'d Drive<'a>, permit: Option<Permit>) -> Option<Self> {
        let (Some(Permit::Probe), Some(x)) = (permit, d.engine.crosstab()) else {
            return None;
        };
        Some(CrossProbe {
            d,
            x,
            waited: false,
        })
    }

    async fn take(mut self) -> Result<Probed, Halt> {
        let (engine, call) = (self.d.engine, self.d.call);
        loop {
            let left = self.d.c.deadline.remaining(now_ms());
            let lock = match call
                .cancel
                .within(left, std::pin::pin!(self.x.probe_lock(&call.spec.key)))
                .await
            {
                Ok(lock) => lock,
                Err(Wake::Cancelled) => Err(call.cancel.abort_error())?,
                Err(_) => Err(Halt::OutOfTime)?,
            };
            if lock.is_some() && !self.waited {
                return Ok(Probed::Go(lock));
            }
            // Not half-open any more: that tab's news came meanwhile.
            let watched = engine.watch_probe(&self.d.c);
            let Some(id) = watched else {
                return Ok(Probed::Again);
            };
            // With the lock: a moment for that tab's news, which was sent
            // before it let go, on another channel (not ordered with it).
            let cap = if lock.is_some() { GRACE_MS } else { RECHECK_MS };
            if Apart(self.await_probe(id, cap)).await? {
                return Ok(Probed::Again);
            }
            if lock.is_some() {
                return Ok(Probed::Go(lock));
            }
            self.waited = true;
        }
    }

    /// Waits for the probe's outcome (`Ok(true)`: the call is released and
    /// asks the core again) for at most `cap` ms (`Ok(false)`), within the
    /// call's deadline and until it is cancelled (`Err`). Unless released,
    /// it leaves the key's queue.
    async fn await_probe(&self, id: ProbeWaiter, cap: f64) -> Result<bool, Halt> {
        let (engine, call, c) = (self.d.engine, self.d.call, &self.d.c);
        let gate = Gate::new();
        engine.park_probe_wait(id, gate.clone());
        let left = c.deadline.remaining(now_ms());
        let wake = call.cancel.wait_on(&gate, cap.min(left)).await;
        if matches!(wake, Wake::Timer | Wake::Cancelled) {
            engine.unpark_probe_wait(c, id);
        }
        match wake {
            Wake::Cancelled => Err(call.cancel.abort_error().into()),
            Wake::Timer if cap < left => Ok(false),
            Wake::Timer => Err(Halt::OutOfTime),
            _ => Ok(true),
        }
    }
}

/// How often a call waiting for another tab's probe looks at its lock.
const RECHECK_MS: f64 = 250.0;

/// How long a call that waited for another tab's probe lock, once it has
/// it, waits for that tab's news before it probes itself.
const GRACE_MS: f64 = 50.0;
