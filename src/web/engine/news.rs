//! Breaker news. Calls waiting for a half-open probe wake when its outcome
//! (or another tab's news) releases them. This tab's transitions become
//! `breaker` events and messages for the other tabs, and the holds it sets
//! go to them too; the other tabs' messages become this tab's state; and
//! the first open breaker turns half-open when its period ends, by a timer,
//! not when a call next asks. A child of `engine`: it reads the engine's
//! own fields.

use super::Engine;
use crate::policy::breaker::State as BreakerState;
use crate::web::crosstab::Peer;
use crate::web::events::Breaker;
use crate::web::host::{epoch_ms, now_ms};
use crate::web::runtime::Alarm;

impl Engine {
    /// Emits the breaker transitions the policy core recorded and sends the
    /// holds it set; this tab's own transitions (`share`) go to the other
    /// tabs too.
    pub(super) fn flush(&self, request_id: &str, share: bool) {
        self.wake_probe_waiters();
        let (transitions, holds) = {
            let g = &mut self.st.borrow_mut().guard;
            (g.drain_transitions(), g.drain_holds())
        };
        if let Some(x) = self.crosstab.get() {
            for h in holds {
                x.send(&Peer::Cooldown {
                    key: h.key,
                    who: h.who,
                    until: epoch_ms() + h.wait_ms,
                    quota: h.quota,
                });
            }
        }
        if transitions.is_empty() {
            return;
        }
        let now = now_ms();
        for t in transitions {
            if let Some(x) = self.crosstab.get().filter(|_| share) {
                let info = self.st.borrow().guard.open_info(&t.key, now);
                match (t.to, info) {
                    (BreakerState::Open, Some((left, period))) => x.send(&Peer::Open {
                        key: t.key.clone(),
                        until: epoch_ms() + left,
                        period,
                    }),
                    (BreakerState::Closed, _) => x.send(&Peer::Closed { key: t.key.clone() }),
                    _ => {}
                }
            }
            // Open -> half-open happens with time, and a peer's news is no
            // call's doing either.
            let id = if t.to == BreakerState::HalfOpen || !share {
                ""
            } else {
                request_id
            };
            self.events.emit("breaker", id, &|o| {
                o.breaker = Breaker {
                    key: Some(&t.key),
                    from: Some(t.from),
                    to: Some(t.to),
                };
            });
        }
        self.arm_half_open();
    }

    /// Sets the timer for the first open breaker's end, unless it is set
    /// for that time already; drops it when no breaker is open.
    fn arm_half_open(&self) {
        let next = if self.is_closed() {
            None
        } else {
            self.st.borrow().guard.next_half_open()
        };
        let mut slot = self.half_open.borrow_mut();
        if slot.as_ref().map(|(_, at)| *at) == next {
            return;
        }
        *slot = next.map(|at| {
            let me = self.me.clone();
            let alarm = Alarm::run(at - now_ms(), move || {
                if let Some(engine) = me.upgrade() {
                    engine.half_open_due();
                }
            });
            (alarm, at)
        });
    }

    /// An open period has ended: report the breakers turned half-open now
    /// (an event with `requestId: ''`), not when a call next asks.
    fn half_open_due(&self) {
        self.half_open.borrow_mut().take();
        if self.is_closed() {
            return;
        }
        self.decide("", |g| g.refresh(now_ms()));
        self.arm_half_open();
    }

    /// News from another tab: follow its breaker, respect its cooldown.
    pub fn apply_peer(&self, msg: Peer) {
        let (now, epoch) = (now_ms(), epoch_ms());
        {
            let g = &mut self.st.borrow_mut().guard;
            match msg {
                Peer::Open { key, until, period } => g.peer_open(&key, now, until - epoch, period),
                Peer::Closed { key } => g.peer_closed(&key, now),
                Peer::Cooldown {
                    key,
                    who,
                    until,
                    quota,
                } => g.peer_hold(&key, who, until - epoch, quota, now),
            }
        }
        self.flush("", false);
    }
}
