//! A call's first attempt sent by the boot build before the engine was in
//! (`src/boot.rs`, pkg-template/boot.js), adopted as the call's own: its
//! outcome is the engine's sample (breaker, budget, stats) and its end the
//! call's first round, after which the call goes on as every call does
//! (retries, classification, events are the engine's).

use wasm_bindgen::JsValue;

use super::round::Round;
use super::Drive;
use crate::web::call::{AdoptedEnd, Halt, Prepared};
use crate::web::crosstab::ProbeLock;
use crate::web::fetch::{self, AttemptEnd, Decided};
use crate::web::host::{now_ms, rand01};
use crate::web::runtime::{Apart, Stop};

impl Drive<'_> {
    /// The call's next round of attempts, and the probe lock it holds until
    /// the round is settled: its adopted first attempt's, or one admitted
    /// and sent now.
    pub(super) async fn next_round(&mut self) -> Result<(Decided, Option<ProbeLock>), Halt> {
        match self.call.take_adopted() {
            Some(a) if !matches!(a.end, AdoptedEnd::Unsent) => {
                return Ok((Apart(adopted(self, a.started_ms, a.end)).await, None));
            }
            // None sent: it ended while it waited for the engine, by its
            // deadline (`late`): it ends so, no hook run. One its caller
            // aborted ends as every aborted call does, at the first step of
            // its attempt (`prepare`), before any.
            Some(_) if !self.call.cancel.is_cancelled() => return Err(Halt::OutOfTime),
            _ => {}
        }
        let (sent, lock, prepared) = Apart(self.admitted()).await?;
        Ok((Apart(Round::run(self, sent, &prepared)).await, lock))
    }
}

/// The round of the call's adopted first attempt, sent at `started_ms`:
/// an answer is read as the engine's own attempts' are (status, error
/// body, rate-limit fields), within the attempt's time left.
async fn adopted(d: &mut Drive<'_>, started_ms: f64, end: AdoptedEnd) -> Decided {
    let (engine, call) = (d.engine, d.call);
    let send = d.decide(|g, c| g.adopt(c, started_ms, now_ms(), rand01()));
    call.cancel.begin_attempt(send.attempt);
    let prepared = Prepared(JsValue::UNDEFINED);
    let leg = |adopted| fetch::Leg {
        hedge: false,
        prepared: &prepared,
        events: engine.events(),
        adopted,
    };
    let transport = call.layer().transport().unwrap_or(engine.transport());
    let (end, quota) = match end {
        AdoptedEnd::Answer(answer) => {
            let leg = leg(Some(&answer));
            Apart(fetch::attempt(call, transport, send, Stop::new(), leg)).await
        }
        other => {
            fetch::announce(call, &send, &leg(None));
            let end = match other {
                AdoptedEnd::Parse(e) => AttemptEnd::Parse(e),
                AdoptedEnd::Network(e) => AttemptEnd::Network(e),
                AdoptedEnd::Timeout => AttemptEnd::Timeout(send.phase),
                AdoptedEnd::Cancelled => AttemptEnd::Cancelled,
                _ => AttemptEnd::Done(JsValue::UNDEFINED),
            };
            (end, None)
        }
    };
    if let AttemptEnd::Done(_) = end {
        let now = now_ms();
        engine.answered_in(&d.c, now - send.started_ms, now);
    }
    Decided { end, send, quota }
}
