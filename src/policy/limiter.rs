//! Concurrency limit: at most `max` attempts in flight, the rest wait FIFO
//! in a bounded queue.
//!
//! Why: a page that fires 50 requests at a struggling backend makes every
//! one of them slower; a few at a time finish sooner in total, and a bounded
//! queue turns overload into an immediate, visible `QueueFullError` instead of
//! unbounded memory and latency. Waiters are removable by id (abort,
//! deadline) by binary search, and a freed slot passes straight to the
//! oldest waiter so a newcomer can never overtake the queue.

use std::collections::VecDeque;

use super::option_table::{check, int, table, unread, Given, OptionsError, MAX_DURATION_MS};

table! {
    /// `concurrency`'s options (README, "Client options").
    CONCURRENCY, ConcurrencyMembers {
        max: int("max", 1.0, MAX_DURATION_MS),
        queue: int("queue", 0.0, MAX_DURATION_MS),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct LimiterConfig {
    pub max: u32,
    pub queue: u32,
}

impl Default for LimiterConfig {
    fn default() -> Self {
        Self { max: 6, queue: 100 }
    }
}

impl LimiterConfig {
    /// `concurrency`'s members over the defaults `d`.
    pub(super) fn from_members(g: &[Given], d: Self) -> Result<Self, OptionsError> {
        let m = ConcurrencyMembers::of(g).ok_or_else(|| unread("concurrency"))?;
        check("concurrency", &CONCURRENCY, g)?;
        Ok(Self {
            max: m.max.num().map_or(d.max, |v| v as u32),
            queue: m.queue.num().map_or(d.queue, |v| v as u32),
        })
    }
}

pub type WaiterId = u64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquire {
    /// The caller holds a slot and must `release()` it.
    Granted,
    /// The caller waits; a later `release()` returning this id hands it the slot.
    Queued(WaiterId),
    /// Every slot busy and the queue full.
    Full,
}

#[derive(Debug, Clone)]
pub struct Limiter {
    max: u32,
    queue: u32,
    in_flight: u32,
    /// Ids grow monotonically, so the queue is sorted and its front is the
    /// oldest waiter. (A deque, not a BTreeSet: the same, in far less wasm.)
    waiters: VecDeque<WaiterId>,
    next_id: WaiterId,
}

impl Limiter {
    /// `max` 0 is taken as 1.
    pub fn new(cfg: &LimiterConfig) -> Self {
        Self {
            max: cfg.max.max(1),
            queue: cfg.queue,
            in_flight: 0,
            waiters: VecDeque::new(),
            next_id: 0,
        }
    }

    /// `concurrency: false`: never queues, still counts what is in flight.
    pub fn unlimited() -> Self {
        Self::new(&LimiterConfig {
            max: u32::MAX,
            queue: 0,
        })
    }

    pub fn try_acquire(&mut self) -> Acquire {
        if self.in_flight < self.max && self.waiters.is_empty() {
            self.in_flight += 1;
            Acquire::Granted
        } else if self.queued() < self.queue {
            let id = self.next_id;
            self.next_id += 1;
            self.waiters.push_back(id);
            Acquire::Queued(id)
        } else {
            Acquire::Full
        }
    }

    /// A slot only if one is free now and nobody waits for it: for a
    /// hedge, which is worth sending only at once (waiting in the queue
    /// would defeat it, and it must never overtake a queued call).
    pub fn try_take(&mut self) -> bool {
        let free = self.in_flight < self.max && self.waiters.is_empty();
        if free {
            self.in_flight += 1;
        }
        free
    }

    /// `n` attempts already in flight that took no slot (sent by the boot
    /// build before the engine was in) hold one each until they end, as
    /// [`Limiter::release`] them.
    pub fn hold(&mut self, n: u32) {
        self.in_flight = self.in_flight.saturating_add(n);
    }

    /// Frees a slot; if a waiter is queued the slot passes straight to the
    /// oldest one, whose id is returned (it now holds the slot).
    pub fn release(&mut self) -> Option<WaiterId> {
        let next = self.waiters.pop_front();
        if next.is_none() {
            self.in_flight = self.in_flight.saturating_sub(1);
        }
        next
    }

    /// Removes a queued waiter (abort, deadline); `false` if it was not
    /// queued (already granted: the caller must then `release()`).
    pub fn cancel(&mut self, id: WaiterId) -> bool {
        match self.waiters.binary_search(&id) {
            Ok(i) => self.waiters.remove(i).is_some(),
            Err(_) => false,
        }
    }

    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    pub fn queued(&self) -> u32 {
        u32::try_from(self.waiters.len()).unwrap_or(u32::MAX)
    }
}

// Native only: proptest is a native dev-dependency, and `wasm-pack test`
// builds every test target for wasm32.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    fn limiter(max: u32, queue: u32) -> Limiter {
        Limiter::new(&LimiterConfig { max, queue })
    }

    #[test]
    fn grants_up_to_max_then_queues_then_full() {
        let mut l = limiter(2, 1);
        assert_eq!(l.try_acquire(), Acquire::Granted);
        assert_eq!(l.try_acquire(), Acquire::Granted);
        assert_eq!(l.try_acquire(), Acquire::Queued(0));
        assert_eq!(l.try_acquire(), Acquire::Full);
        assert_eq!((l.in_flight(), l.queued()), (2, 1));
    }

    #[test]
    fn held_slots_queue_the_next_call_until_each_is_released() {
        let mut l = limiter(6, 10);
        l.hold(6);
        assert_eq!(l.try_acquire(), Acquire::Queued(0));
        assert_eq!(l.release(), Some(0), "the first to end passes its slot on");
        for _ in 0..5 {
            assert_eq!(l.release(), None);
        }
        assert_eq!((l.in_flight(), l.queued()), (1, 0));
    }

    #[test]
    fn try_take_never_queues_nor_overtakes_a_waiter() {
        let mut l = limiter(2, 5);
        assert!(l.try_take());
        assert_eq!(l.try_acquire(), Acquire::Granted);
        assert!(!l.try_take(), "no free slot: no hedge, and nothing queued");
        assert_eq!((l.in_flight(), l.queued()), (2, 0));
        assert_eq!(l.try_acquire(), Acquire::Queued(0));
        assert_eq!(l.release(), Some(0), "the freed slot goes to the waiter");
        assert!(!l.try_take());
        assert_eq!(l.release(), None);
        assert!(l.try_take(), "a free slot with nobody waiting");
    }

    #[test]
    fn queue_zero_rejects_at_once() {
        let mut l = limiter(1, 0);
        assert_eq!(l.try_acquire(), Acquire::Granted);
        assert_eq!(l.try_acquire(), Acquire::Full);
    }

    #[test]
    fn release_hands_the_slot_to_the_oldest_waiter() {
        let mut l = limiter(1, 5);
        assert_eq!(l.try_acquire(), Acquire::Granted);
        assert_eq!(l.try_acquire(), Acquire::Queued(0));
        assert_eq!(l.try_acquire(), Acquire::Queued(1));
        assert_eq!(l.release(), Some(0));
        assert_eq!((l.in_flight(), l.queued()), (1, 1));
        assert_eq!(l.release(), Some(1));
        assert_eq!(l.release(), None);
        assert_eq!(l.in_flight(), 0);
    }

    #[test]
    fn cancelled_waiter_leaves_the_queue() {
        let mut l = limiter(1, 5);
        assert_eq!(l.try_acquire(), Acquire::Granted);
        assert_eq!(l.try_acquire(), Acquire::Queued(0));
        assert_eq!(l.try_acquire(), Acquire::Queued(1));
        assert!(l.cancel(0));
        assert!(!l.cancel(0));
        assert_eq!(l.release(), Some(1));
        assert!(!l.cancel(1));
        assert_eq!(l.release(), None);
        assert_eq!((l.in_flight(), l.queued()), (0, 0));
    }

    #[test]
    fn newcomers_do_not_overtake_waiters() {
        let mut l = limiter(1, 5);
        assert_eq!(l.try_acquire(), Acquire::Granted);
        assert_eq!(l.try_acquire(), Acquire::Queued(0));
        assert_eq!(l.try_acquire(), Acquire::Queued(1));
        assert!(l.cancel(1));
        assert_eq!(l.release(), Some(0));
        assert_eq!(l.try_acquire(), Acquire::Queued(2));
    }

    #[test]
    fn unlimited_never_queues() {
        let mut l = Limiter::unlimited();
        for _ in 0..10_000 {
            assert_eq!(l.try_acquire(), Acquire::Granted);
        }
        assert_eq!(l.in_flight(), 10_000);
        assert_eq!(l.release(), None);
        assert_eq!(l.in_flight(), 9_999);
    }

    #[test]
    fn zero_max_is_one_and_extra_release_saturates() {
        let mut l = limiter(0, 0);
        assert_eq!(l.try_acquire(), Acquire::Granted);
        assert_eq!(l.try_acquire(), Acquire::Full);
        assert_eq!(l.release(), None);
        assert_eq!(l.release(), None);
        assert_eq!(l.in_flight(), 0);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Acquire,
        /// A holder finishes its attempt.
        Release,
        /// A waiter (picked by index) aborts while queued.
        Cancel(usize),
        /// A waiter that was already handed a slot aborts: cancel must refuse.
        CancelLate(usize),
    }

    proptest! {
        /// Models the callers: a granted call holds a slot until it releases;
        /// a queued call either receives one from `release` or cancels.
        #[test]
        fn never_over_max_never_leaks(
            max in 1..5u32,
            queue in 0..5u32,
            ops in prop::collection::vec(prop_oneof![
                Just(Op::Acquire),
                Just(Op::Release),
                any::<usize>().prop_map(Op::Cancel),
                any::<usize>().prop_map(Op::CancelLate),
            ], 1..200),
        ) {
            let mut l = limiter(max, queue);
            let mut holders = 0usize;
            let mut waiting: VecDeque<WaiterId> = VecDeque::new();
            let mut handed: Vec<WaiterId> = Vec::new();
            for op in ops {
                match op {
                    Op::Acquire => match l.try_acquire() {
                        Acquire::Granted => holders += 1,
                        Acquire::Queued(id) => waiting.push_back(id),
                        Acquire::Full => {
                            prop_assert_eq!((l.in_flight(), l.queued()), (max, queue));
                        }
                    },
                    Op::Release if holders > 0 => match l.release() {
                        Some(id) => {
                            prop_assert_eq!(Some(id), waiting.pop_front(), "FIFO");
                            handed.push(id);
                        }
                        None => {
                            prop_assert!(waiting.is_empty());
                            holders -= 1;
                        }
                    },
                    Op::Cancel(i) if !waiting.is_empty() => {
                        let id = waiting.remove(i % waiting.len()).unwrap();
                        prop_assert!(l.cancel(id));
                    }
                    Op::CancelLate(i) if !handed.is_empty() => {
                        prop_assert!(!l.cancel(handed[i % handed.len()]));
                    }
                    Op::Release | Op::Cancel(_) | Op::CancelLate(_) => {}
                }
                prop_assert!(l.in_flight() <= max);
                prop_assert_eq!(l.in_flight() as usize, holders, "leaked or double slot");
                prop_assert_eq!(l.queued() as usize, waiting.len());
                prop_assert!(l.queued() <= queue);
                // A slot is never idle while someone waits.
                prop_assert!(waiting.is_empty() || l.in_flight() == max);
            }
            for id in waiting.drain(..) {
                prop_assert!(l.cancel(id));
            }
            for _ in 0..holders {
                prop_assert_eq!(l.release(), None);
            }
            prop_assert_eq!((l.in_flight(), l.queued()), (0, 0));
        }
    }
}
