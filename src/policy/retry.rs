//! The retry policy's options: how many attempts, how long between them,
//! which statuses and methods may be retried (README, "Client options",
//! `retry`). The rules that decide one retry are `classify::plan_retry`'s;
//! the delays are `backoff.rs`'s.

use super::option_table::{
    any, check, int, ms, one_of, table, unread, Given, Kind, Opt, OptionsError, Rule,
};

type Result<T> = std::result::Result<T, OptionsError>;

/// Retryable statuses by default, and the breaker's failures when `retry` is off.
pub const DEFAULT_STATUSES: [u16; 6] = [408, 429, 500, 502, 503, 504];

const DEFAULT_METHODS: [&str; 5] = ["GET", "HEAD", "OPTIONS", "PUT", "DELETE"];

/// `retry.jitter`'s names, case-sensitive as in the TypeScript type, in
/// [`Jitter`]'s order.
const JITTERS: [&str; 4] = ["full", "equal", "decorrelated", "none"];

table! {
    /// `retry`'s options (README, "Client options"; `retryOn`, a function,
    /// is read beside them by the web side).
    RETRY, RetryMembers {
        max_attempts: int("maxAttempts", 1.0, 10.0),
        base_delay_ms: ms("baseDelayMs", 0.0),
        max_delay_ms: ms("maxDelayMs", 0.0),
        jitter: one_of(
            "jitter",
            &JITTERS,
            "must be 'full', 'equal', 'decorrelated' or 'none'",
        ),
        statuses: Opt {
            key: "statuses",
            kind: Kind::Nums,
            rule: Rule::Statuses,
        },
        methods: Opt {
            key: "methods",
            kind: Kind::Texts,
            rule: Rule::Methods,
        },
        retry_after: any("retryAfter", Kind::Bool),
        max_retry_after_ms: ms("maxRetryAfterMs", 0.0),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    Full,
    Equal,
    Decorrelated,
    None,
}

impl Jitter {
    /// By name (`JITTERS`).
    pub fn parse(name: &str) -> Option<Jitter> {
        match JITTERS.iter().position(|j| *j == name)? {
            0 => Some(Jitter::Full),
            1 => Some(Jitter::Equal),
            2 => Some(Jitter::Decorrelated),
            _ => Some(Jitter::None),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct RetryConfig {
    pub max_attempts: u32,
    pub base_delay_ms: f64,
    pub max_delay_ms: f64,
    pub jitter: Jitter,
    pub statuses: Vec<u16>,
    /// Uppercased.
    pub methods: Vec<String>,
    pub retry_after: bool,
    pub max_retry_after_ms: f64,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            base_delay_ms: 1000.0,
            max_delay_ms: 8000.0,
            jitter: Jitter::Full,
            statuses: DEFAULT_STATUSES.to_vec(),
            methods: DEFAULT_METHODS.iter().map(|m| (*m).to_owned()).collect(),
            retry_after: true,
            max_retry_after_ms: 30_000.0,
        }
    }
}

impl RetryConfig {
    /// `retry: false` as a config: one attempt; the default statuses still
    /// tell which outcomes are failures.
    pub fn off() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// `retry`'s members over `self`'s settings.
    pub(super) fn merged(&self, g: &[Given]) -> Result<Self> {
        let m = RetryMembers::of(g).ok_or_else(|| unread("retry"))?;
        check("retry", &RETRY, g)?;
        Ok(Self {
            max_attempts: m.max_attempts.num().map_or(self.max_attempts, |v| v as u32),
            base_delay_ms: m.base_delay_ms.num().unwrap_or(self.base_delay_ms),
            max_delay_ms: m.max_delay_ms.num().unwrap_or(self.max_delay_ms),
            jitter: m
                .jitter
                .text()
                .and_then(Jitter::parse)
                .unwrap_or(self.jitter),
            statuses: match m.statuses {
                Given::Nums(list) => list.iter().map(|&s| s as u16).collect(),
                _ => self.statuses.clone(),
            },
            methods: match m.methods {
                Given::Texts(list) => list.iter().map(|m| m.to_ascii_uppercase()).collect(),
                _ => self.methods.clone(),
            },
            retry_after: m.retry_after.flag().unwrap_or(self.retry_after),
            max_retry_after_ms: m
                .max_retry_after_ms
                .num()
                .unwrap_or(self.max_retry_after_ms),
        })
    }
}
