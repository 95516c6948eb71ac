//! The executor the client's calls run on.
//!
//! # Why not js-sys's
//!
//! js-sys's executor queues a microtask for every wake-up, so each awaited
//! promise costs a hop through the microtask queue after its reaction job:
//! two per `request()` (the response and its body), the second measured at
//! 40-55 µs in Chromium behind what the body stream had queued. Here
//! a task woken by a promise it awaits through [`settle`] is polled right in
//! the promise's reaction job, which the event loop runs on a clean stack.
//! Every other wake-up (a gate opened by a cancel or by another call, a
//! timer, a task waking itself) is queued as before, and a poll never nests
//! inside another: a task woken while any task is being polled is queued.
//! The first poll of a new task is queued too, so nothing a call does (its
//! events included) runs inside the `request()` that started it.
//!
//! These rules and the wakers' reference counts (the `unsafe` below, each
//! with its invariant) are proven by `tests/runtime.rs` (see `mod.rs`).
//!
//! # Promises without closures
//!
//! A promise is awaited without a closure of its own: `settle.js` hands
//! its outcome to the one `ON_SETTLED` closure by the number its [`Settle`]
//! was given. wasm-bindgen-futures' `JsFuture` made two closures per
//! promise (each a JS function registered with a FinalizationRegistry,
//! unref'd and destroyed after), four per `request()`.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = queueMicrotask)]
    fn queue_microtask(f: &Closure<dyn FnMut()>);
}

#[wasm_bindgen(module = "/src/web/runtime/settle.js")]
extern "C" {
    /// `promise.then` reporting to `settled` with `id` (settle.js).
    fn watch(promise: &js_sys::Promise, id: u32, settled: &Closure<dyn FnMut(u32, bool, JsValue)>);
    /// Node: a function that runs another in the async context of now
    /// (settle.js); undefined elsewhere.
    fn context() -> JsValue;
}

type Boxed = Pin<Box<dyn Future<Output = ()>>>;

struct Task {
    /// The future and the waker it is polled with; `None` once it is done,
    /// which also breaks the task -> waker -> task cycle.
    slot: RefCell<Option<(Boxed, Waker)>>,
    /// In the run queue (a second wake-up adds nothing).
    queued: Cell<bool>,
    /// Node: the async context of the code that spawned it, in which every
    /// poll runs ([`context`]), so the user functions a call runs (a token,
    /// headers, hooks) see its caller's AsyncLocalStorage whichever call's
    /// event resumed it. Only for tasks spawned under a [`CallersContext`] (a
    /// snapshot costs ~20 µs in Node 20); None elsewhere.
    context: Option<js_sys::Function>,
}

thread_local! {
    static POLLING: Cell<bool> = const { Cell::new(false) };
    static SCHEDULED: Cell<bool> = const { Cell::new(false) };
    static QUEUE: RefCell<VecDeque<Rc<Task>>> = const { RefCell::new(VecDeque::new()) };
    static DRAIN: Closure<dyn FnMut()> = Closure::new(drain);
    /// The promises being awaited, by number, oldest first.
    static WATCHED: RefCell<Vec<(u32, Watched)>> = const { RefCell::new(Vec::new()) };
    static NEXT_ID: Cell<u32> = const { Cell::new(0) };
    static ON_SETTLED: Closure<dyn FnMut(u32, bool, JsValue)> = Closure::new(settled);
    /// Tasks spawned now keep their caller's context ([`CallersContext`]).
    static KEEP_CONTEXT: Cell<bool> = const { Cell::new(false) };
    /// The task [`run`] polls through its context, and the function that does.
    static CURRENT: RefCell<Option<Rc<Task>>> = const { RefCell::new(None) };
    static POLL_CURRENT: Closure<dyn FnMut()> = Closure::new(|| {
        if let Some(task) = CURRENT.with(RefCell::take) {
            poll(&task);
        }
    });
}

/// An awaited promise: the waker of the task waiting for it, or its outcome.
enum Watched {
    Waiting(Option<Waker>),
    Done(Result<JsValue, JsValue>),
}

/// Runs `future` to its end, its first poll one microtask from now.
pub fn spawn(future: impl Future<Output = ()> + 'static) {
    let task = Rc::new(Task {
        slot: RefCell::new(None),
        queued: Cell::new(false),
        context: if KEEP_CONTEXT.with(Cell::get) {
            context().dyn_into().ok()
        } else {
            None
        },
    });
    // SAFETY: see `raw_waker`.
    let waker = unsafe { Waker::from_raw(raw_waker(task.clone(), &QUEUED)) };
    *task.slot.borrow_mut() = Some((Box::pin(future), waker));
    schedule(task);
}

/// While it lives, the tasks spawned (when `keep`) are polled in the async
/// context of the code running now (Node's AsyncLocalStorage): a call whose
/// client runs user functions (a token, headers, hooks) is spawned so.
#[must_use]
pub struct CallersContext(bool);

impl CallersContext {
    pub fn keep(keep: bool) -> CallersContext {
        CallersContext(KEEP_CONTEXT.with(|k| k.replace(keep)))
    }
}

impl Drop for CallersContext {
    fn drop(&mut self) {
        KEEP_CONTEXT.with(|k| k.set(self.0));
    }
}

/// A promise for `future`'s result, the future run by [`spawn`].
pub fn spawn_promise(
    future: impl Future<Output = Result<JsValue, JsValue>> + 'static,
) -> js_sys::Promise {
    let mut future = Some(future);
    js_sys::Promise::new(&mut |resolve, reject| {
        if let Some(f) = future.take() {
            spawn(async move {
                let (settle, value) = match f.await {
                    Ok(v) => (resolve, v),
                    Err(e) => (reject, e),
                };
                let _ = settle.call1(&JsValue::UNDEFINED, &value);
            });
        }
    })
}

/// Awaits `promise`; the task goes on inside the promise's reaction job.
/// Its reactions are attached now, as `promise.then` would: a rejection is
/// handled even if the `Settle` is never polled.
pub fn settle(promise: js_sys::Promise) -> Settle {
    let id = NEXT_ID.with(|n| n.replace(n.get().wrapping_add(1)));
    WATCHED.with(|w| w.borrow_mut().push((id, Watched::Waiting(None))));
    ON_SETTLED.with(|f| watch(&promise, id, f));
    Settle { id }
}

/// A promise's outcome, awaited; dropped before it, the outcome is ignored.
pub struct Settle {
    id: u32,
}

/// Where promise `id` is in `WATCHED` (a few entries: one per awaited
/// promise, the newest at the end).
fn position(watched: &[(u32, Watched)], id: u32) -> Option<usize> {
    watched.iter().rposition(|(i, _)| *i == id)
}

/// `ON_SETTLED`: promise `id` has settled; its task goes on at once.
fn settled(id: u32, fulfilled: bool, value: JsValue) {
    let outcome = if fulfilled { Ok(value) } else { Err(value) };
    let waker = WATCHED.with(|w| {
        let mut w = w.borrow_mut();
        let i = position(&w, id)?;
        let (_, slot) = w.get_mut(i)?;
        match std::mem::replace(slot, Watched::Done(outcome)) {
            Watched::Waiting(waker) => waker,
            Watched::Done(_) => None,
        }
    });
    // Woken with the list released: the task may await other promises.
    if let Some(waker) = waker {
        waker.wake();
    }
}

impl Future for Settle {
    type Output = Result<JsValue, JsValue>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let id = self.id;
        // A waker replaced is dropped after the list is released.
        let (poll, _replaced) = WATCHED.with(|w| {
            let mut w = w.borrow_mut();
            let Some(i) = position(&w, id) else {
                // Polled after it was ready: nothing more will come.
                return (Poll::Pending, None);
            };
            match w.get_mut(i) {
                Some((_, Watched::Waiting(slot))) => (Poll::Pending, slot.replace(waker_for(cx))),
                _ => match w.remove(i).1 {
                    Watched::Done(outcome) => (Poll::Ready(outcome), None),
                    Watched::Waiting(_) => (Poll::Pending, None),
                },
            }
        });
        poll
    }
}

/// The waker a `Settle` keeps: one of our tasks goes on in the promise's
/// reaction job (`AT_ONCE`); another executor's (a test's) is woken by its
/// own rules.
fn waker_for(cx: &Context<'_>) -> Waker {
    let waker = cx.waker();
    if !std::ptr::eq(waker.vtable(), &QUEUED) {
        return waker.clone();
    }
    // SAFETY: a waker with our vtable holds an `Rc<Task>` (see
    // `raw_waker`); it is borrowed here, and the clone owns its count.
    let task = unsafe { borrowed(waker.data()) };
    unsafe { Waker::from_raw(raw_waker(Rc::clone(&*task), &AT_ONCE)) }
}

impl Drop for Settle {
    fn drop(&mut self) {
        // The entry (and the waker it may hold) goes; the waker is dropped
        // after the list is released, as dropping it may free a task.
        let id = self.id;
        let gone = WATCHED.with(|w| {
            let mut w = w.borrow_mut();
            position(&w, id).map(|i| w.remove(i))
        });
        drop(gone);
    }
}

fn schedule(task: Rc<Task>) {
    if task.queued.replace(true) {
        return;
    }
    QUEUE.with(|q| q.borrow_mut().push_back(task));
    if !SCHEDULED.with(|s| s.replace(true)) {
        DRAIN.with(queue_microtask);
    }
}

/// The queue's microtask: runs the tasks queued before it started (those
/// queued meanwhile get a microtask of their own).
fn drain() {
    SCHEDULED.with(|s| s.set(false));
    let n = QUEUE.with(|q| q.borrow().len());
    for _ in 0..n {
        let Some(task) = QUEUE.with(|q| q.borrow_mut().pop_front()) else {
            break;
        };
        // Already run in a reaction job since it was queued: nothing to do.
        if task.queued.get() {
            run(&task);
        }
    }
}

/// Polls the task once, in its context if it has one. Only ever entered
/// from a microtask or a reaction job, never from inside another poll.
fn run(task: &Rc<Task>) {
    match &task.context {
        None => poll(task),
        Some(within) => {
            CURRENT.with(|c| c.replace(Some(Rc::clone(task))));
            POLL_CURRENT.with(|f| {
                let _ = within.call1(&JsValue::UNDEFINED, f.as_ref());
            });
        }
    }
}

fn poll(task: &Rc<Task>) {
    task.queued.set(false);
    let mut slot = task.slot.borrow_mut();
    let Some((future, waker)) = slot.as_mut() else {
        return;
    };
    let _polling = Polling::enter();
    if future
        .as_mut()
        .poll(&mut Context::from_waker(waker))
        .is_ready()
    {
        *slot = None;
    }
}

/// Marks a poll in progress, and clears the mark however the poll ends.
struct Polling;

impl Polling {
    fn enter() -> Polling {
        POLLING.with(|p| p.set(true));
        Polling
    }
}

impl Drop for Polling {
    fn drop(&mut self) {
        POLLING.with(|p| p.set(false));
    }
}

fn wake_at_once(task: Rc<Task>) {
    if POLLING.with(Cell::get) {
        schedule(task);
    } else {
        run(&task);
    }
}

// The wakers: an `Rc<Task>` behind a raw pointer. Sound here because a wasm
// module without the atomics feature has one thread: the `Send + Sync` that
// `Waker` promises is never exercised. js-sys's executor does the same.

static QUEUED: RawWakerVTable = RawWakerVTable::new(clone_queued, wake, wake_by_ref, drop_raw);
static AT_ONCE: RawWakerVTable =
    RawWakerVTable::new(clone_at_once, wake_now, wake_now_by_ref, drop_raw);

/// # Safety
/// The pointer owns one count of `task`; the vtable's functions give it back.
unsafe fn raw_waker(task: Rc<Task>, vtable: &'static RawWakerVTable) -> RawWaker {
    RawWaker::new(Rc::into_raw(task).cast::<()>(), vtable)
}

/// # Safety
/// `ptr` comes from `raw_waker` and its count is still owned by a waker.
unsafe fn borrowed(ptr: *const ()) -> ManuallyDrop<Rc<Task>> {
    ManuallyDrop::new(unsafe { Rc::from_raw(ptr.cast::<Task>()) })
}

unsafe fn clone_queued(ptr: *const ()) -> RawWaker {
    unsafe { raw_waker(Rc::clone(&*borrowed(ptr)), &QUEUED) }
}

unsafe fn clone_at_once(ptr: *const ()) -> RawWaker {
    unsafe { raw_waker(Rc::clone(&*borrowed(ptr)), &AT_ONCE) }
}

unsafe fn wake(ptr: *const ()) {
    schedule(unsafe { Rc::from_raw(ptr.cast::<Task>()) });
}

unsafe fn wake_by_ref(ptr: *const ()) {
    schedule(Rc::clone(&*unsafe { borrowed(ptr) }));
}

unsafe fn wake_now(ptr: *const ()) {
    wake_at_once(unsafe { Rc::from_raw(ptr.cast::<Task>()) });
}

unsafe fn wake_now_by_ref(ptr: *const ()) {
    wake_at_once(Rc::clone(&*unsafe { borrowed(ptr) }));
}

unsafe fn drop_raw(ptr: *const ()) {
    drop(unsafe { Rc::from_raw(ptr.cast::<Task>()) });
}

/// `future` polled by a function of its own, so that its state machine is
/// not inlined into the one that awaits it (see `mod.rs`). Nothing else
/// changes: the same polls, in the same task, with no allocation.
pub struct Apart<F>(pub F);

impl<F: Future> Future for Apart<F> {
    type Output = F::Output;
    #[inline(never)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: structural pinning: the future is never moved out of
        // `Apart`, nor is `Apart` Unpin unless the future is.
        unsafe { self.map_unchecked_mut(|a| &mut a.0) }.poll(cx)
    }
}
