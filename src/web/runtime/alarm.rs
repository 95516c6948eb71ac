//! Every unref'd timer of the module on one host timer.

use std::cell::RefCell;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::gate::clamp_ms;
use super::stop::Stop;
use crate::web::convert::get;
use crate::web::host::{clear_timeout, now_ms, set_timeout_with, timer_fired, timer_is, timer_now};

/// What a due alarm does.
enum Action {
    /// An attempt's timeout: stop it as timed out (no closure to box).
    Stop(Stop),
    /// Anything else (a breaker's open period ending).
    Run(Box<dyn FnOnce()>),
}

struct Due {
    id: u64,
    at: f64,
    action: Action,
}

/// Every alarm (attempt timeouts, breaker periods) on one host timer,
/// armed for the earliest. Attempts usually end long before their timeout,
/// so a call costs no `setTimeout`/`clearTimeout` pair and no closure: the
/// host timer is re-armed only when a new alarm is due before the armed
/// time, or when it fires. It is never cleared when idle (unref'd in Node,
/// so it keeps no process alive); firing with nothing due costs one scan.
/// The host timer is always armed for the earliest alarm, so alarms fire
/// in time order; those found due at the same firing (the page was busy
/// past several) run in the order they were set.
#[derive(Default)]
struct Alarms {
    next_id: u64,
    due: Vec<Due>,
    armed: Option<Armed>,
    /// Numbers the host timers set, so a firing says which it is.
    generation: f64,
}

/// The host timer the alarms are armed on.
struct Armed {
    id: JsValue,
    at: f64,
    set_at: f64,
    generation: f64,
    /// The global setTimeout it was set with: its clock.
    clock: JsValue,
}

thread_local! {
    static ALARMS: RefCell<Alarms> = RefCell::new(Alarms::default());
    static ON_ALARM: Closure<dyn FnMut(f64)> = Closure::new(fire_alarms);
}

impl Alarms {
    /// Arms the host timer for `at` unless it is armed for no later.
    ///
    /// A host timer set on a clock that is gone (a test's fake timers,
    /// installed or put back since: Vitest's and Jest's `useFakeTimers` /
    /// `useRealTimers`) may never fire, and every alarm due after it would
    /// wait for it for ever; nor does the new clock's `clearTimeout` know it.
    /// So it is forgotten and the host timer set again on the clock of now;
    /// if the old one fires after all, its generation is stale and it does
    /// nothing. (`tests/e2e/fake-clock.test.mjs`.)
    fn arm(&mut self, at: f64, now: f64) {
        if let Some(armed) = &self.armed {
            if timer_is(&armed.clock) {
                if armed.at <= at {
                    return;
                }
                clear_timeout(&armed.id);
            }
        }
        self.generation += 1.0;
        let generation = self.generation;
        let id = ON_ALARM
            .with(|f| set_timeout_with(f.as_ref().unchecked_ref(), clamp_ms(at - now), generation));
        if let Ok(unref) = get(&id, "unref").and_then(|f| f.dyn_into::<js_sys::Function>()) {
            let _ = unref.call0(&id);
        }
        self.armed = Some(Armed {
            id,
            at,
            set_at: now,
            generation,
            clock: timer_now(),
        });
    }
}

fn fire_alarms(generation: f64) {
    let expired: Vec<Due> = ALARMS.with(|a| {
        let mut a = a.borrow_mut();
        // A host timer forgotten when its clock went (see `arm`): the one
        // armed now stands.
        if a.armed.as_ref().is_some_and(|x| x.generation != generation) {
            return Vec::new();
        }
        // The host waited for the time it was armed for: evidence for the
        // clock when `performance.now` stands still.
        let now = match a.armed.take() {
            Some(x) => timer_fired(x.set_at, x.at),
            None => now_ms(),
        };
        let (expired, pending) = std::mem::take(&mut a.due)
            .into_iter()
            .partition(|d| d.at <= now);
        a.due = pending;
        if let Some(next) = a.due.iter().map(|d| d.at).reduce(f64::min) {
            a.arm(next, now);
        }
        expired
    });
    // Run outside the borrow: an action may set or drop alarms.
    for d in expired {
        match d.action {
            Action::Stop(stop) => stop.time_out(),
            Action::Run(f) => f(),
        }
    }
}

/// A timer on the module's one host timer, removed when dropped: a dropped
/// alarm never fires.
#[must_use = "an alarm is removed when dropped"]
pub struct Alarm(u64);

impl Alarm {
    /// In `ms`, stops the attempt as timed out.
    pub fn stop(ms: f64, stop: &Stop) -> Alarm {
        Alarm::at(ms, Action::Stop(stop.clone()))
    }

    /// In `ms`, calls `f`.
    pub fn run(ms: f64, f: impl FnOnce() + 'static) -> Alarm {
        Alarm::at(ms, Action::Run(Box::new(f)))
    }

    fn at(ms: f64, action: Action) -> Alarm {
        let now = now_ms();
        let at = now + ms;
        ALARMS.with(|a| {
            let mut a = a.borrow_mut();
            a.next_id += 1;
            let id = a.next_id;
            a.due.push(Due { id, at, action });
            a.arm(at, now);
            Alarm(id)
        })
    }
}

impl Drop for Alarm {
    fn drop(&mut self) {
        ALARMS.with(|a| a.borrow_mut().due.retain(|d| d.id != self.0));
    }
}
