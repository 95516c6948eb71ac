//! Runs of failures per origin, across its breaker keys: bursts.
//!
//! # Why
//!
//! Breakers are per endpoint, but backends fail per origin. A page load
//! sends a burst of calls to several endpoints of one backend at once (the
//! storm benchmark's: 6 calls to 3 paths). When they all fail together, the
//! origin may be down, or may be in a blip (a deploy, a load balancer
//! restart: 100 ms to 1 s): at the burst's first failures the two look the
//! same. Retrying every call of the burst sends the whole burst into an
//! outage again; opening every endpoint at once (the rule this replaces,
//! issue 42) gave up every blip. So the burst's retries go one at a time:
//! one goes as the origin's probe, the others wait for its outcome.
//!
//! # Runs and bursts
//!
//! A run of an origin counts every failure sample of its keys since its
//! last success sample, and the keys that failed in it *together*: a
//! failure counts toward its key's place in the run only when another
//! failure was recorded while its attempt was out (the key sent before
//! that failure was known). Failures one after the other (a test, or an
//! app, calling one failing endpoint after another, each sent after the
//! last failure came back) never correlate. Once the run holds at least
//! `n` (`consecutiveFailures`) failures and several endpoints failed
//! together in it (`n` of them, or two of them at least twice each), it is
//! a *burst*: the keys that failed together in it are *held* (see
//! `Breakers::burst`). A success at any key of the origin ends the run: a
//! burst whose calls partly succeed is an overload, not a blip, and its
//! retries follow the ordinary budget and breakers. Nothing here opens a
//! breaker: each key's own breaker counts its own row only.
//!
//! # Memory
//!
//! Memory is bounded: at most [`MAX_ORIGINS`] runs are kept, the one that
//! failed least recently is forgotten first.

/// Origins with a run kept at once.
pub(super) const MAX_ORIGINS: usize = 32;

/// An origin's current run of failures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Run {
    /// Never 0 (0 marks a key in no run), unique over every origin.
    pub id: u64,
    pub failures: u32,
    /// Distinct keys that failed in the run.
    pub keys: u32,
    /// Keys that failed at least twice in the run.
    pub repeated: u32,
    /// The origin's probes that failed in the run.
    pub lost: u32,
    /// No probe goes before this time (when a retry of the burst would
    /// typically go).
    pub probe_at: f64,
    /// `probe_at` was set since the last probe went.
    pub scheduled: bool,
    /// [`Origins::seen`] before the run's first failure.
    pub start: u64,
    /// Another key's attempt was out when the run's first failure came
    /// back (the first failure has no other before it to count with).
    pub first_together: bool,
}

impl InRun {
    /// It failed together with others in `run` (it is held while `run`
    /// is a burst).
    pub fn together_in(&self, run: &Run) -> bool {
        self.id == run.id && (self.failures > 0 || (self.first && run.first_together))
    }
}

impl Run {
    const NONE: Run = Run {
        id: 0,
        failures: 0,
        keys: 0,
        repeated: 0,
        lost: 0,
        probe_at: 0.0,
        scheduled: false,
        start: 0,
        first_together: false,
    };

    /// At least `n` failures, over `n` keys or with two keys failing twice.
    pub fn correlated(&self, n: u32) -> bool {
        self.failures >= n && self.keys >= 2 && (self.keys >= n || self.repeated >= 2)
    }
}

/// Where a key stands in its origin's runs: the run it last failed in
/// (0: none), its failures there that came with others (the only ones that
/// count toward correlation), [`Origins::seen`] when it last sent, and
/// whether it failed first in the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct InRun {
    pub id: u64,
    pub failures: u32,
    pub sent: u64,
    /// Its failure was the run's first.
    pub first: bool,
}

#[derive(Debug, Clone, Default)]
pub(super) struct Origins {
    /// (origin, its run, when it last failed)
    runs: Vec<(String, Run, u64)>,
    /// Origins whose blip is over (a burst's first probe succeeded): the
    /// burst's retries the budget denied may go (see `guard/burst.rs`)
    /// until the origin's next failure. At most [`MAX_ORIGINS`].
    released: Vec<String>,
    last_id: u64,
    tick: u64,
}

impl Origins {
    /// Failures recorded so far (every origin): a key notes it when it
    /// sends ([`InRun::sent`]), so that its failure can tell whether others
    /// failed while its attempt was out.
    pub fn seen(&self) -> u64 {
        self.tick
    }

    /// A failure of a key standing at `key` (updated to the origin's
    /// current run): the run as it now stands.
    pub fn failure(&mut self, origin: &str, key: &mut InRun) -> Run {
        let together = self.tick > key.sent;
        self.tick += 1;
        let tick = self.tick;
        self.released.retain(|o| o != origin);
        let i = match self.runs.iter().position(|(o, ..)| o == origin) {
            Some(i) => i,
            None => {
                if self.runs.len() >= MAX_ORIGINS {
                    let oldest = self
                        .runs
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, (.., t))| *t)
                        .map(|(i, _)| i);
                    if let Some(i) = oldest {
                        self.runs.swap_remove(i);
                    }
                }
                self.last_id += 1;
                let run = Run {
                    id: self.last_id,
                    start: tick - 1,
                    ..Run::NONE
                };
                self.runs.push((origin.to_owned(), run, tick));
                self.runs.len() - 1
            }
        };
        let Some((_, run, touched)) = self.runs.get_mut(i) else {
            return Run::NONE;
        };
        *touched = tick;
        run.failures = run.failures.saturating_add(1);
        if key.id != run.id {
            key.id = run.id;
            key.failures = 0;
            key.first = run.failures == 1;
        }
        // Out when the run's first failure came back: that one failed
        // together with others too.
        if run.failures > 1 && key.sent <= run.start {
            run.first_together = true;
        }
        if together {
            key.failures = key.failures.saturating_add(1);
            match key.failures {
                1 => run.keys = run.keys.saturating_add(1),
                2 => run.repeated = run.repeated.saturating_add(1),
                _ => {}
            }
        }
        *run
    }

    /// A success at `origin` ends its run: the run ended, if any.
    /// The end of a run that was a burst (`n`: see [`Run::correlated`])
    /// and lost no probe (a blip: its first probe succeeded) releases the
    /// burst's retries the budget denied, until the origin's next failure.
    /// A run that lost a probe (the tail of an outage) releases none.
    pub fn success(&mut self, origin: &str, n: u32) -> Option<Run> {
        let i = self.runs.iter().position(|(o, ..)| o == origin)?;
        let ended = self.runs.swap_remove(i).1;
        self.released.retain(|o| o != origin);
        if ended.correlated(n) && ended.lost == 0 {
            if self.released.len() >= MAX_ORIGINS {
                self.released.remove(0);
            }
            self.released.push(origin.to_owned());
        }
        Some(ended)
    }

    /// The origin's blip is over and no failure came since: the burst's
    /// retries the budget denied may go.
    pub fn released(&self, origin: &str) -> bool {
        self.released.iter().any(|o| o == origin)
    }

    /// The run `id`, while it lasts.
    pub fn by_id(&mut self, id: u64) -> Option<&mut Run> {
        self.runs
            .iter_mut()
            .find(|(_, r, _)| r.id == id && id != 0)
            .map(|(_, r, _)| r)
    }

    /// The origin's current run.
    pub fn current(&self, origin: &str) -> Option<Run> {
        self.runs
            .iter()
            .find(|(o, ..)| o == origin)
            .map(|(_, r, _)| *r)
    }
}

/// The origin of a key of the default shape `METHOD scheme://authority/path`
/// (`scheme://authority`); None for any other key (`breakerKey`s the app
/// chose group as the app chose).
pub(super) fn origin_of(key: &str) -> Option<&str> {
    // Bytes, not `str::find("://")`: a substring search links a searcher
    // of its own into the wasm.
    let b = key.as_bytes();
    let space = b.iter().position(|&c| c == b' ').filter(|&i| i > 0)?;
    let url = space + 1;
    let mut i = url;
    while b.get(i).is_some_and(u8::is_ascii_alphabetic) {
        i += 1;
    }
    if i == url || b.get(i..i + 3) != Some(b"://".as_slice()) {
        return None;
    }
    let host = i + 3;
    let end = b
        .get(host..)?
        .iter()
        .position(|&c| c == b'/')
        .map_or(b.len(), |n| host + n);
    (end > host).then(|| key.get(url..end)).flatten()
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    #[test]
    fn origin_of_default_keys_only() {
        assert_eq!(
            origin_of("GET https://api.example:8080/v1/items"),
            Some("https://api.example:8080")
        );
        assert_eq!(
            origin_of("POST http://127.0.0.1:9/capacity/user"),
            Some("http://127.0.0.1:9")
        );
        assert_eq!(
            origin_of("GET https://api.example"),
            Some("https://api.example")
        );
        for key in [
            "payments",
            "http://127.0.0.1:9",
            " https://a/x",
            "GET https:///x",
            "GET data:",
            "GET nothing",
        ] {
            assert_eq!(origin_of(key), None, "{key}");
        }
    }

    /// `key` sends now (as `Breakers::acquire` notes it).
    fn send(o: &Origins, key: &mut InRun) {
        key.sent = o.seen();
    }

    #[test]
    fn a_run_counts_failures_and_keys_until_a_success() {
        let mut o = Origins::default();
        let (mut a, mut b, mut c) = (InRun::default(), InRun::default(), InRun::default());
        // A burst: all three out before any failure came back.
        for k in [&mut a, &mut b, &mut c] {
            send(&o, k);
        }
        let r = o.failure("https://x", &mut a);
        // The first failure to come back had no other with it.
        assert_eq!((r.failures, r.keys, a.id, a.failures), (1, 0, r.id, 0));
        let r = o.failure("https://x", &mut b);
        assert_eq!((r.failures, r.keys, r.repeated), (2, 1, 0));
        assert!(!r.correlated(2), "one key together");
        let r = o.failure("https://x", &mut c);
        assert_eq!((r.failures, r.keys), (3, 2));
        assert!(!r.correlated(3) && r.correlated(2));
        // All three sent again, failing together: A's comes back first
        // (alone), then B's and C's, each a second time with others.
        for k in [&mut a, &mut b, &mut c] {
            send(&o, k);
        }
        let r = o.failure("https://x", &mut a);
        assert_eq!((r.keys, r.repeated, a.failures), (2, 0, 0));
        let r = o.failure("https://x", &mut b);
        assert_eq!((r.failures, r.keys, r.repeated), (5, 2, 1));
        assert!(!r.correlated(3), "one key twice, another once");
        let r = o.failure("https://x", &mut c);
        assert_eq!((r.failures, r.keys, r.repeated), (6, 2, 2));
        assert!(r.correlated(3) && r.correlated(6) && !r.correlated(7));
        assert_eq!(o.success("https://x", 2).map(|r| r.id), Some(a.id));
        assert_eq!(o.current("https://x"), None);
        // A new run.
        send(&o, &mut a);
        let r = o.failure("https://x", &mut a);
        assert_ne!(r.id, b.id, "a new run");
        assert_eq!((a.id, a.failures), (r.id, 0));
    }

    /// A burst of three keys, all out together, failing together.
    fn burst(o: &mut Origins) {
        let mut keys = [InRun::default(); 3];
        for k in keys.iter_mut() {
            send(o, k);
        }
        for k in keys.iter_mut() {
            o.failure("https://x", k);
        }
        assert!(o.current("https://x").unwrap().correlated(2));
    }

    #[test]
    fn a_burst_whose_probe_succeeded_first_releases_until_a_failure_one_that_lost_a_probe_never() {
        // A blip: the burst's first probe succeeds.
        let mut o = Origins::default();
        burst(&mut o);
        assert!(o.success("https://x", 2).is_some());
        assert!(o.released("https://x"));
        assert!(o.success("https://x", 2).is_none());
        assert!(o.released("https://x"), "later successes keep it");
        // The origin's next failure ends the release.
        o.failure("https://x", &mut InRun::default());
        assert!(!o.released("https://x"));
        // The tail of an outage: a probe failed once, the next succeeds.
        let mut o = Origins::default();
        burst(&mut o);
        let run = o.current("https://x").unwrap();
        o.by_id(run.id).unwrap().lost = 1;
        assert_eq!(o.success("https://x", 2).map(|r| r.id), Some(run.id));
        assert!(!o.released("https://x"));
        o.success("https://x", 2);
        assert!(!o.released("https://x"), "later successes release none");
    }

    #[test]
    fn failures_one_after_another_never_correlate() {
        // Each endpoint sent after the last failure came back (a loop over
        // failing endpoints, each call retried): the run grows, but no
        // failure came with another, so no key counts.
        let mut o = Origins::default();
        let mut keys = [InRun::default(); 4];
        for k in keys.iter_mut() {
            for _ in 0..3 {
                send(&o, k);
                let r = o.failure("https://x", k);
                assert_eq!((r.keys, r.repeated), (0, 0));
                assert!(!r.correlated(2));
            }
        }
        assert_eq!(o.current("https://x").map(|r| r.failures), Some(12));
    }

    #[test]
    fn origins_are_bounded_and_forget_the_oldest() {
        let mut o = Origins::default();
        let mut k = InRun::default();
        for i in 0..=MAX_ORIGINS {
            let _ = o.failure(&format!("https://{i}"), &mut k);
        }
        assert_eq!(o.runs.len(), MAX_ORIGINS);
        assert_eq!(o.current("https://0"), None);
        assert!(o.current(&format!("https://{MAX_ORIGINS}")).is_some());
    }
}
