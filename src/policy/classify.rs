//! What an attempt's outcome means: a breaker sample, and whether (and after
//! how long) the call may try again.
//!
//! Why these rules: a retry is only safe when replaying the request cannot do
//! harm (idempotent methods, or a request carrying an idempotency key) and
//! only useful when the failure may be transient (the retryable statuses,
//! network errors, timeouts). A 4xx will fail the same way again, and a
//! caller abort means nobody wants the answer.

use super::backoff::Backoff;
use super::retry::RetryConfig;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Outcome {
    Status(u16),
    Network,
    Timeout,
    Aborted,
}

/// Why a failed attempt was not retried (`HttpError.retryDenied`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryDenied {
    Budget,
    Method,
    Status,
    Deadline,
    RetryAfter,
    Attempts,
    /// A `beforeRetry` hook returned `false`.
    Hook,
    /// `retry.retryOn` returned `false`.
    Predicate,
}

impl RetryDenied {
    pub fn as_str(self) -> &'static str {
        match self {
            RetryDenied::Budget => "budget",
            RetryDenied::Method => "method",
            RetryDenied::Status => "status",
            RetryDenied::Deadline => "deadline",
            RetryDenied::RetryAfter => "retryAfter",
            RetryDenied::Attempts => "attempts",
            RetryDenied::Hook => "hook",
            RetryDenied::Predicate => "predicate",
        }
    }
}

/// What one attempt tells the breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sample {
    Success,
    Failure,
    /// Says nothing about the server (caller abort, never sent).
    Ignored,
}

/// Network errors, timeouts and `failure_statuses` are failures; any other
/// status is a success (the server answered); an abort is ignored.
pub fn sample(outcome: Outcome, failure_statuses: &[u16]) -> Sample {
    match outcome {
        Outcome::Status(s) if failure_statuses.contains(&s) => Sample::Failure,
        Outcome::Status(_) => Sample::Success,
        Outcome::Network | Outcome::Timeout => Sample::Failure,
        Outcome::Aborted => Sample::Ignored,
    }
}

pub fn is_success_status(status: u16) -> bool {
    (200..300).contains(&status)
}

/// Whether replaying `method` is safe: listed in `retry.methods`
/// (case-insensitive), or any method when the call has an idempotency key.
pub fn method_may_retry(cfg: &RetryConfig, method: &str, has_idempotency_key: bool) -> bool {
    has_idempotency_key || cfg.methods.iter().any(|m| m.eq_ignore_ascii_case(method))
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryInput<'a> {
    pub outcome: Outcome,
    /// Attempts made so far, the failed one included.
    pub attempts_made: u32,
    pub method: &'a str,
    pub has_idempotency_key: bool,
    /// Parsed `Retry-After`; only honoured for 429 and 503.
    pub retry_after_ms: Option<f64>,
    /// Time left before the call's deadline.
    pub remaining_ms: f64,
    /// What `retry.retryOn` answered (`None`: not asked, or undefined).
    pub said: Option<bool>,
}

/// Decides whether a failed attempt is retried: `Ok(wait_ms)` or why not.
///
/// Checked in this order: outcome (a 2xx, a status outside `retry.statuses`
/// and a caller abort all give `Status`: none is a retryable failure; the
/// `retry.retryOn` predicate's `false` gives `Predicate`, its `true` makes
/// any status but a 2xx retryable, ky's `shouldRetry`), then
/// `Method`, `Attempts`, `RetryAfter` (a Retry-After on 429/503, when
/// `retry.retryAfter` is on, beyond `maxRetryAfterMs`), and `Deadline` (the
/// wait, `max(backoff, Retry-After)`, would reach the deadline). Only when
/// everything else allows a retry is the backoff drawn. The engine then asks
/// the retry budget, so a retry denied here never spends budget.
pub fn plan_retry(
    cfg: &RetryConfig,
    backoff: &mut Backoff,
    input: &RetryInput,
    rand01: f64,
) -> Result<f64, RetryDenied> {
    let retry_after = match input.outcome {
        Outcome::Aborted => return Err(RetryDenied::Status),
        Outcome::Status(s) if is_success_status(s) => return Err(RetryDenied::Status),
        _ if input.said == Some(false) => return Err(RetryDenied::Predicate),
        Outcome::Status(s) if !cfg.statuses.contains(&s) && input.said != Some(true) => {
            return Err(RetryDenied::Status)
        }
        Outcome::Status(s) if cfg.retry_after && (s == 429 || s == 503) => input.retry_after_ms,
        Outcome::Status(_) | Outcome::Network | Outcome::Timeout => None,
    };
    if !method_may_retry(cfg, input.method, input.has_idempotency_key) {
        return Err(RetryDenied::Method);
    }
    if input.attempts_made >= cfg.max_attempts {
        return Err(RetryDenied::Attempts);
    }
    let floor = match retry_after {
        Some(ms) if ms > cfg.max_retry_after_ms || ms.is_nan() => {
            return Err(RetryDenied::RetryAfter)
        }
        Some(ms) => ms,
        None => 0.0,
    };
    let wait = backoff.delay(input.attempts_made, rand01).max(floor);
    if wait < input.remaining_ms {
        Ok(wait)
    } else {
        Err(RetryDenied::Deadline)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::retry::{Jitter, DEFAULT_STATUSES};

    /// No jitter and a 200 ms base, so every wait below is exact.
    fn cfg() -> RetryConfig {
        RetryConfig {
            jitter: Jitter::None,
            base_delay_ms: 200.0,
            ..RetryConfig::default()
        }
    }

    fn input(outcome: Outcome) -> RetryInput<'static> {
        RetryInput {
            outcome,
            attempts_made: 1,
            method: "GET",
            has_idempotency_key: false,
            retry_after_ms: None,
            remaining_ms: 10_000.0,
            said: None,
        }
    }

    fn plan(cfg: &RetryConfig, input: &RetryInput) -> Result<f64, RetryDenied> {
        plan_retry(cfg, &mut Backoff::from_config(cfg), input, 0.5)
    }

    #[test]
    fn denial_names() {
        let names: Vec<_> = [
            RetryDenied::Budget,
            RetryDenied::Method,
            RetryDenied::Status,
            RetryDenied::Deadline,
            RetryDenied::RetryAfter,
            RetryDenied::Attempts,
            RetryDenied::Hook,
            RetryDenied::Predicate,
        ]
        .map(RetryDenied::as_str)
        .into();
        assert_eq!(
            names,
            [
                "budget",
                "method",
                "status",
                "deadline",
                "retryAfter",
                "attempts",
                "hook",
                "predicate"
            ]
        );
    }

    #[test]
    fn samples() {
        let f = &DEFAULT_STATUSES;
        assert_eq!(sample(Outcome::Network, f), Sample::Failure);
        assert_eq!(sample(Outcome::Timeout, f), Sample::Failure);
        assert_eq!(sample(Outcome::Status(503), f), Sample::Failure);
        assert_eq!(sample(Outcome::Status(408), f), Sample::Failure);
        assert_eq!(sample(Outcome::Status(200), f), Sample::Success);
        assert_eq!(sample(Outcome::Status(404), f), Sample::Success);
        assert_eq!(sample(Outcome::Status(501), f), Sample::Success);
        assert_eq!(sample(Outcome::Aborted, f), Sample::Ignored);
        assert_eq!(sample(Outcome::Status(503), &[]), Sample::Success);
    }

    #[test]
    fn success_statuses() {
        assert!(is_success_status(200) && is_success_status(204) && is_success_status(299));
        assert!(!is_success_status(199) && !is_success_status(300) && !is_success_status(503));
    }

    #[test]
    fn methods() {
        let c = cfg();
        for m in ["GET", "get", "Head", "OPTIONS", "put", "DELETE"] {
            assert!(method_may_retry(&c, m, false), "{m}");
        }
        for m in ["POST", "PATCH", "CONNECT", ""] {
            assert!(!method_may_retry(&c, m, false), "{m}");
            assert!(method_may_retry(&c, m, true), "{m}");
        }
    }

    #[test]
    fn retryable_failures_wait_the_backoff() {
        let c = cfg();
        for o in [
            Outcome::Network,
            Outcome::Timeout,
            Outcome::Status(500),
            Outcome::Status(408),
        ] {
            assert_eq!(plan(&c, &input(o)), Ok(200.0));
        }
        let second = RetryInput {
            attempts_made: 2,
            ..input(Outcome::Network)
        };
        assert_eq!(plan(&c, &second), Ok(400.0));
    }

    #[test]
    fn statuses_outside_the_list_are_never_retried() {
        let c = cfg();
        for s in [200, 204, 301, 400, 401, 403, 404, 409, 422, 501] {
            assert_eq!(
                plan(&c, &input(Outcome::Status(s))),
                Err(RetryDenied::Status),
                "{s}"
            );
        }
        let listed_2xx = RetryConfig {
            statuses: vec![200],
            ..cfg()
        };
        assert_eq!(
            plan(&listed_2xx, &input(Outcome::Status(200))),
            Err(RetryDenied::Status)
        );
    }

    #[test]
    fn aborts_are_never_retried() {
        assert_eq!(
            plan(&cfg(), &input(Outcome::Aborted)),
            Err(RetryDenied::Status)
        );
    }

    #[test]
    fn unsafe_methods_need_an_idempotency_key() {
        let post = RetryInput {
            method: "POST",
            ..input(Outcome::Status(503))
        };
        assert_eq!(plan(&cfg(), &post), Err(RetryDenied::Method));
        let keyed = RetryInput {
            has_idempotency_key: true,
            ..post
        };
        assert_eq!(plan(&cfg(), &keyed), Ok(200.0));
        // A non-retryable status wins over the method.
        let post_404 = RetryInput {
            outcome: Outcome::Status(404),
            ..post
        };
        assert_eq!(plan(&cfg(), &post_404), Err(RetryDenied::Status));
    }

    #[test]
    fn the_predicate_overrides_the_status_rule_only() {
        let yes = |outcome| RetryInput {
            said: Some(true),
            ..input(outcome)
        };
        // true: a status outside retry.statuses is retried, a 2xx or an abort never
        assert_eq!(plan(&cfg(), &yes(Outcome::Status(404))), Ok(200.0));
        assert_eq!(
            plan(&cfg(), &yes(Outcome::Status(200))),
            Err(RetryDenied::Status)
        );
        assert_eq!(
            plan(&cfg(), &yes(Outcome::Aborted)),
            Err(RetryDenied::Status)
        );
        // but never past the method, the attempts, Retry-After's cap or the deadline
        let post = RetryInput {
            method: "POST",
            ..yes(Outcome::Status(404))
        };
        assert_eq!(plan(&cfg(), &post), Err(RetryDenied::Method));
        let last = RetryInput {
            attempts_made: 3,
            ..yes(Outcome::Status(404))
        };
        assert_eq!(plan(&cfg(), &last), Err(RetryDenied::Attempts));
        let far = RetryInput {
            retry_after_ms: Some(1e9),
            ..yes(Outcome::Status(429))
        };
        let no_429 = RetryConfig {
            statuses: vec![503],
            ..cfg()
        };
        assert_eq!(plan(&no_429, &far), Err(RetryDenied::RetryAfter));
        let late = RetryInput {
            remaining_ms: 100.0,
            ..yes(Outcome::Status(404))
        };
        assert_eq!(plan(&cfg(), &late), Err(RetryDenied::Deadline));
        // false: no retry of any failure, named so
        for outcome in [Outcome::Status(503), Outcome::Network, Outcome::Timeout] {
            let no = RetryInput {
                said: Some(false),
                ..input(outcome)
            };
            assert_eq!(plan(&cfg(), &no), Err(RetryDenied::Predicate));
        }
        // undefined: the policy decides
        assert_eq!(
            plan(&cfg(), &input(Outcome::Status(404))),
            Err(RetryDenied::Status)
        );
        assert_eq!(plan(&cfg(), &input(Outcome::Status(503))), Ok(200.0));
    }

    #[test]
    fn attempts_are_capped() {
        let last = RetryInput {
            attempts_made: 3,
            ..input(Outcome::Network)
        };
        assert_eq!(plan(&cfg(), &last), Err(RetryDenied::Attempts));
        // The method is reported before the attempts.
        let post = RetryInput {
            method: "POST",
            ..last
        };
        assert_eq!(plan(&cfg(), &post), Err(RetryDenied::Method));
        assert_eq!(
            plan(&RetryConfig::off(), &input(Outcome::Network)),
            Err(RetryDenied::Attempts)
        );
    }

    #[test]
    fn retry_after_sets_the_minimum_wait() {
        for s in [429, 503] {
            let i = RetryInput {
                retry_after_ms: Some(3000.0),
                ..input(Outcome::Status(s))
            };
            assert_eq!(plan(&cfg(), &i), Ok(3000.0));
            let short = RetryInput {
                retry_after_ms: Some(10.0),
                ..i
            };
            assert_eq!(plan(&cfg(), &short), Ok(200.0));
        }
    }

    #[test]
    fn retry_after_is_ignored_unless_429_or_503_and_enabled() {
        let on_500 = RetryInput {
            retry_after_ms: Some(3000.0),
            ..input(Outcome::Status(500))
        };
        assert_eq!(plan(&cfg(), &on_500), Ok(200.0));
        let off = RetryConfig {
            retry_after: false,
            ..cfg()
        };
        let huge = RetryInput {
            retry_after_ms: Some(1e9),
            ..input(Outcome::Status(503))
        };
        assert_eq!(plan(&off, &huge), Ok(200.0));
    }

    #[test]
    fn retry_after_beyond_the_cap_gives_up() {
        let i = RetryInput {
            retry_after_ms: Some(30_001.0),
            remaining_ms: 1e9,
            ..input(Outcome::Status(429))
        };
        assert_eq!(plan(&cfg(), &i), Err(RetryDenied::RetryAfter));
        let at_cap = RetryInput {
            retry_after_ms: Some(30_000.0),
            ..i
        };
        assert_eq!(plan(&cfg(), &at_cap), Ok(30_000.0));
    }

    #[test]
    fn a_wait_reaching_the_deadline_gives_up() {
        let i = RetryInput {
            remaining_ms: 200.0,
            ..input(Outcome::Network)
        };
        assert_eq!(plan(&cfg(), &i), Err(RetryDenied::Deadline));
        let ok = RetryInput {
            remaining_ms: 200.5,
            ..i
        };
        assert_eq!(plan(&cfg(), &ok), Ok(200.0));
        let ra = RetryInput {
            retry_after_ms: Some(5000.0),
            remaining_ms: 4000.0,
            ..input(Outcome::Status(503))
        };
        assert_eq!(plan(&cfg(), &ra), Err(RetryDenied::Deadline));
        let nan = RetryInput {
            remaining_ms: f64::NAN,
            ..i
        };
        assert_eq!(plan(&cfg(), &nan), Err(RetryDenied::Deadline));
    }
}
