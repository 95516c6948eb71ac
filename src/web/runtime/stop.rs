//! An attempt's stop switch.

use std::cell::Cell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use web_sys::{AbortController, AbortSignal};

use super::gate::{Gate, GateFuture, Wake};

/// An attempt's stop switch: its timer and a cancel both abort the request
/// (the host's fetch sees its signal) and open the gate the attempt also
/// waits on, so the attempt ends even when a fetch stand-in ignores the
/// signal and never settles. Dropping it has no effect: it is a switch,
/// not a guard (the timer that throws it is an [`super::Alarm`]).
#[derive(Clone)]
pub struct Stop {
    ctl: AbortController,
    gate: Gate,
    timed_out: Rc<Cell<bool>>,
}

impl Stop {
    pub fn new() -> Result<Stop, JsValue> {
        Ok(Stop {
            ctl: AbortController::new()?,
            gate: Gate::new(),
            timed_out: Rc::new(Cell::new(false)),
        })
    }

    /// Stops the attempt: it is not wanted any more (a hedge answered, the
    /// call was cancelled). The first stop wins.
    pub fn abort(&self) {
        self.fire(false);
    }

    /// Stops the attempt as timed out (its alarm ran out).
    pub(super) fn time_out(&self) {
        self.fire(true);
    }

    pub fn signal(&self) -> AbortSignal {
        self.ctl.signal()
    }

    /// Whether the attempt's timer stopped it.
    pub fn timed_out(&self) -> bool {
        self.timed_out.get()
    }

    /// Opens when the attempt is stopped, by its timer or a cancel.
    pub fn wait(&self) -> GateFuture {
        self.gate.wait()
    }

    /// Whether both are the same switch.
    pub fn same(&self, other: &Stop) -> bool {
        self.gate.same(&other.gate)
    }

    fn fire(&self, timeout: bool) {
        if self.gate.is_open() {
            return;
        }
        self.timed_out.set(timeout);
        self.gate.open(if timeout {
            Wake::Timer
        } else {
            Wake::Cancelled
        });
        self.ctl.abort();
    }
}
