//! Direct tests of the runtime's invariants (`src/web/runtime/mod.rs` lists
//! them): the executor, gates and timers, in headless Chromium and Firefox
//! through `wasm-pack test` (`npm test`). No network: nothing here needs
//! the fault server. Each test names what breaking its invariant looks like.
#![cfg(target_arch = "wasm32")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use stormguard::runtime::{self, Alarm, Either, Gate, Race, Wake};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(f: &js_sys::Function, ms: i32) -> JsValue;
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn now() -> f64;
}

/// `ms` of the host's own timer, awaited on the test harness's executor.
async fn pause(ms: i32) {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        set_timeout(&resolve, ms);
    });
    JsFuture::from(p).await.unwrap();
}

/// Waits up to 2 s for `done`; fails the test if it never holds.
async fn until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..200 {
        if done() {
            return;
        }
        pause(10).await;
    }
    panic!("never happened: {what}");
}

/// A promise and the function that resolves it.
fn deferred() -> (js_sys::Promise, js_sys::Function) {
    let mut resolve = None;
    let p = js_sys::Promise::new(&mut |res, _| resolve = Some(res));
    (p, resolve.unwrap())
}

/// Sets its flag when dropped.
struct DropFlag(Rc<Cell<bool>>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.set(true);
    }
}

/// Counts the polls of the future it wraps, and tells when the wrapper
/// itself (not just the state inside the future) is dropped.
struct Counted<F> {
    inner: Pin<Box<F>>,
    polls: Rc<Cell<u32>>,
    _dropped: DropFlag,
}

impl<F: Future> Future for Counted<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.polls.set(self.polls.get() + 1);
        self.inner.as_mut().poll(cx)
    }
}

fn counted<F: Future>(f: F) -> (Counted<F>, Rc<Cell<u32>>, Rc<Cell<bool>>) {
    let polls = Rc::new(Cell::new(0));
    let dropped = Rc::new(Cell::new(false));
    let c = Counted {
        inner: Box::pin(f),
        polls: polls.clone(),
        _dropped: DropFlag(dropped.clone()),
    };
    (c, polls, dropped)
}

/// A task woken during its own poll (by itself, twice) and another task
/// woken during that poll: neither is polled inside the poll (a nested
/// poll would find the task's slot borrowed and panic), and both are
/// polled again once it has returned; two wakes queue one poll. Breaks if
/// the executor clears a task's `queued` mark after the poll instead of
/// before (the wakes during the poll are lost: one poll of A, the test
/// times out), or polls a queued wake at once (nested poll, depth 2).
#[wasm_bindgen_test]
async fn wake_during_a_poll_is_queued_and_polled_again() {
    let depth = Rc::new(Cell::new(0u32));
    let deepest = Rc::new(Cell::new(0u32));
    let b_waker: Rc<RefCell<Option<Waker>>> = Rc::default();
    let enter = {
        let (depth, deepest) = (depth.clone(), deepest.clone());
        move || {
            depth.set(depth.get() + 1);
            deepest.set(deepest.get().max(depth.get()));
        }
    };
    let leave = {
        let depth = depth.clone();
        move || depth.set(depth.get() - 1)
    };

    let (b, b_polls, _) = counted({
        let (enter, leave, b_waker) = (enter.clone(), leave.clone(), b_waker.clone());
        let mut first = true;
        poll_fn(move |cx| {
            enter();
            let out = if std::mem::take(&mut first) {
                *b_waker.borrow_mut() = Some(cx.waker().clone());
                Poll::Pending
            } else {
                Poll::Ready(())
            };
            leave();
            out
        })
    });
    let (a, a_polls, _) = counted({
        let mut first = true;
        poll_fn(move |cx| {
            enter();
            let out = if std::mem::take(&mut first) {
                cx.waker().wake_by_ref();
                // By value too: the clone's count goes with the wake.
                let owned = cx.waker().clone();
                owned.wake();
                if let Some(w) = b_waker.borrow_mut().take() {
                    w.wake();
                }
                Poll::Pending
            } else {
                Poll::Ready(())
            };
            leave();
            out
        })
    });
    runtime::spawn(b);
    runtime::spawn(a);
    until("both tasks polled twice", || {
        a_polls.get() == 2 && b_polls.get() == 2
    })
    .await;
    pause(20).await;
    assert_eq!(a_polls.get(), 2, "two wakes during one poll: one more poll");
    assert_eq!(deepest.get(), 1, "a poll ran inside another");
}

/// A task awaiting a promise through `settle` goes on inside the promise's
/// reaction job: before a reaction registered after its own. Breaks if the
/// promise's wake is queued like any other (the later reaction runs first).
#[wasm_bindgen_test]
async fn promise_wake_polls_the_task_in_the_reaction_job() {
    let log: Rc<RefCell<Vec<&'static str>>> = Rc::default();
    let (promise, resolve) = deferred();
    {
        let (log, promise) = (log.clone(), promise.clone());
        runtime::spawn(async move {
            log.borrow_mut().push("awaiting");
            let v = runtime::settle(promise).await;
            assert_eq!(v.unwrap().as_f64(), Some(7.0));
            log.borrow_mut().push("task");
        });
    }
    // The task's first poll is queued: once it has run, its reaction is
    // the promise's first.
    until("the task awaits", || log.borrow().len() == 1).await;
    let later = {
        let log = log.clone();
        Closure::<dyn FnMut(JsValue)>::new(move |_| log.borrow_mut().push("later reaction"))
    };
    let _ = promise.then(&later);
    resolve.call1(&JsValue::UNDEFINED, &7.into()).unwrap();
    until("both reactions ran", || log.borrow().len() == 3).await;
    assert_eq!(*log.borrow(), ["awaiting", "task", "later reaction"]);
}

/// A finished task drops its future at once (the future object itself,
/// not only the locals an async block drops at its end), and a waker of it
/// that outlives it (a gate it also waited on) wakes nothing: no poll of a
/// finished future, no panic. Breaks if the executor keeps a finished
/// future (the wrapper is never dropped, and the late wake polls it again).
#[wasm_bindgen_test]
async fn finished_task_drops_its_future_and_ignores_later_wakes() {
    let (first, late) = (Gate::new(), Gate::new());
    let seen: Rc<Cell<Option<bool>>> = Rc::default();
    let (task, polls, dropped) = counted({
        let (first, late, seen) = (first.clone(), late.clone(), seen.clone());
        async move {
            let won = Race(first.wait(), late.wait()).await;
            seen.set(Some(matches!(won, Either::Left(Wake::Done))));
        }
    });
    runtime::spawn(task);
    until("the task waits on both gates", || polls.get() == 1).await;
    first.open(Wake::Done);
    until("the task finished", || seen.get().is_some()).await;
    assert_eq!(seen.get(), Some(true));
    assert!(dropped.get(), "the finished task's future was not dropped");
    assert_eq!(polls.get(), 2);
    // The second gate still holds the task's waker.
    late.open(Wake::Done);
    pause(20).await;
    assert_eq!(polls.get(), 2, "a finished task was polled again");
    // The executor goes on: a new task runs to its end.
    let after = Rc::new(Cell::new(false));
    let a = after.clone();
    runtime::spawn(async move { a.set(true) });
    until("a task after the late wake", || after.get()).await;
}

/// The loser of a race is dropped pending (its destructors run when the
/// race ends), and the promise it awaited settling afterwards wakes
/// nothing: the reaction job's wake finds a finished task. Breaks like the
/// test above if a finished future were kept, and if `Race` did not end
/// with the first future to finish.
#[wasm_bindgen_test]
async fn race_loser_is_dropped_pending_and_its_promise_settles_harmlessly() {
    let (promise, resolve) = deferred();
    let gate = Gate::new();
    let loser_dropped = Rc::new(Cell::new(false));
    let at_end: Rc<Cell<Option<bool>>> = Rc::default();
    let (task, polls, _) = counted({
        let (gate, flag, at_end) = (gate.clone(), loser_dropped.clone(), at_end.clone());
        async move {
            let guard = DropFlag(flag.clone());
            let loser = async move {
                let _guard = guard;
                runtime::settle(promise).await
            };
            let out = Race(Box::pin(loser), gate.wait()).await;
            assert!(matches!(out, Either::Right(Wake::Cancelled)));
            at_end.set(Some(flag.get()));
        }
    });
    runtime::spawn(task);
    until("the task waits", || polls.get() == 1).await;
    gate.open(Wake::Cancelled);
    until("the race ended", || at_end.get().is_some()).await;
    assert_eq!(at_end.get(), Some(true), "the loser was not dropped");
    let polls_at_end = polls.get();
    resolve.call1(&JsValue::UNDEFINED, &1.into()).unwrap();
    pause(20).await;
    assert_eq!(
        polls.get(),
        polls_at_end,
        "a finished task was polled again"
    );
    // A promise awaited after that still wakes its task in its reaction job.
    let done = Rc::new(Cell::new(false));
    let d = done.clone();
    runtime::spawn(async move {
        let v = runtime::settle(js_sys::Promise::resolve(&JsValue::from(2))).await;
        d.set(v.unwrap().as_f64() == Some(2.0));
    });
    until("a later settle", || done.get()).await;
}

/// An alarm dropped before its time never fires, while one kept beside it
/// does. Breaks if dropping an alarm left it in the alarm list.
#[wasm_bindgen_test]
async fn dropped_alarm_never_fires() {
    let (a, b) = (Rc::new(Cell::new(false)), Rc::new(Cell::new(false)));
    let (fa, fb) = (a.clone(), b.clone());
    let dropped = Alarm::run(10.0, move || fa.set(true));
    let kept = Alarm::run(30.0, move || fb.set(true));
    drop(dropped);
    until("the kept alarm fired", || b.get()).await;
    pause(30).await;
    assert!(!a.get(), "a dropped alarm fired");
    drop(kept);
}

/// Alarms fire in time order, whatever the order they were set in: the
/// one host timer is re-armed for an alarm due before the armed time.
/// Breaks if it were not (the 50 ms alarm would wait for the 200 ms
/// firing and run after it, in the order set).
#[wasm_bindgen_test]
async fn alarms_fire_in_time_order() {
    let log: Rc<RefCell<Vec<u32>>> = Rc::default();
    let at = |ms: u32| {
        let log = log.clone();
        Alarm::run(f64::from(ms), move || log.borrow_mut().push(ms))
    };
    // Wide apart: the first alarm of a page (a debug build) takes tens of
    // milliseconds to set.
    let _alarms = [at(200), at(50), at(400)];
    until("all three alarms fired", || log.borrow().len() == 3).await;
    assert_eq!(*log.borrow(), [50, 200, 400]);
}

/// Issue 27 item 7: timers fire on the host's timers whatever
/// `performance.now` says. With it frozen or running backwards, an alarm
/// found itself never due and re-armed itself forever (an attempt's
/// timeout never fired). Breaks if the clock ignored fired timers.
#[wasm_bindgen_test]
async fn timers_fire_with_performance_now_frozen_or_running_backwards() {
    let perf = js_sys::Reflect::get(&js_sys::global(), &"performance".into()).unwrap();
    let stubs = [
        "return 1000;",
        "return (globalThis.__backwards = (globalThis.__backwards || 1e6) - 3);",
        "throw new Error('no clock');",
    ];
    for stub in stubs {
        js_sys::Reflect::set(&perf, &"now".into(), &js_sys::Function::new_no_args(stub)).unwrap();
        let (early, late) = (Rc::new(Cell::new(false)), Rc::new(Cell::new(false)));
        let (fe, fl) = (early.clone(), late.clone());
        let _a = Alarm::run(60.0, move || fe.set(true));
        let _b = Alarm::run(120.0, move || fl.set(true));
        let slept = runtime::sleep(30.0).await;
        // pause() and the harness use the host's timers, not the clock.
        for _ in 0..100 {
            if late.get() {
                break;
            }
            pause(10).await;
        }
        js_sys::Reflect::delete_property(&perf.clone().into(), &"now".into()).unwrap();
        assert_eq!(slept, Wake::Timer, "{stub}");
        assert!(early.get() && late.get(), "{stub}: an alarm never fired");
    }
}

/// A timed wait dropped before its time clears its timer: its gate never
/// opens. A kept one ends with `Wake::Timer`. Breaks if a timed wait left
/// its host timer running.
#[wasm_bindgen_test]
async fn dropped_timed_wait_never_opens_its_gate() {
    let gate = Gate::new();
    drop(gate.wait_at_most(Some(10.0)));
    assert_eq!(runtime::sleep(30.0).await, Wake::Timer);
    pause(20).await;
    assert!(!gate.is_open(), "a dropped wait's timer opened its gate");
}

/// A gate opens once: the first `open` decides what its waiter sees, and a
/// timer that fires after it changes nothing. Breaks if a later `open`
/// overwrote the first.
#[wasm_bindgen_test]
async fn gate_first_open_wins() {
    let gate = Gate::new();
    let wait = gate.wait_at_most(Some(5.0));
    gate.open(Wake::Granted);
    gate.open(Wake::Cancelled);
    pause(20).await;
    assert_eq!(wait.await, Wake::Granted);
}
