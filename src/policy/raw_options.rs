//! Options written as Rust structs, for Rust callers: the native tests and
//! the storm simulation (`tests/sim.rs`). Each turns into the members its
//! table reads (`options::CLIENT`, `CALL` and the sub-option tables), in
//! the table's order, and goes through the same checks as what the web
//! side reads from JS. The wasm never builds one (none of this ships).

use super::option_table::Given;

/// An option that may be absent (defaults), `false` (off) or a value: a
/// sub-option object, or `breaker.consecutiveFailures`'s count.
#[derive(Debug, Clone, Default)]
pub enum Toggle<T> {
    #[default]
    Default,
    Off,
    On(T),
}

fn num(v: Option<f64>) -> Given {
    v.map_or(Given::Absent, Given::Num)
}

fn flag(v: Option<bool>) -> Given {
    v.map_or(Given::Absent, Given::Bool)
}

fn text(v: &Option<String>) -> Given {
    v.clone().map_or(Given::Absent, Given::Text)
}

fn group<T>(t: &Toggle<T>, members: impl FnOnce(&T) -> Vec<Given>) -> Given {
    match t {
        Toggle::Default => Given::Absent,
        Toggle::Off => Given::Off,
        Toggle::On(v) => Given::Group(members(v)),
    }
}

/// `retry` (`retry::RETRY`).
#[derive(Debug, Clone, Default)]
pub struct RawRetry {
    pub max_attempts: Option<f64>,
    pub base_delay_ms: Option<f64>,
    pub max_delay_ms: Option<f64>,
    pub jitter: Option<String>,
    pub statuses: Option<Vec<f64>>,
    pub methods: Option<Vec<String>>,
    pub retry_after: Option<bool>,
    pub max_retry_after_ms: Option<f64>,
}

impl RawRetry {
    pub fn members(&self) -> Vec<Given> {
        vec![
            num(self.max_attempts),
            num(self.base_delay_ms),
            num(self.max_delay_ms),
            text(&self.jitter),
            self.statuses.clone().map_or(Given::Absent, Given::Nums),
            self.methods.clone().map_or(Given::Absent, Given::Texts),
            flag(self.retry_after),
            num(self.max_retry_after_ms),
        ]
    }
}

/// `budget` (`budget::BUDGET`).
#[derive(Debug, Clone, Default)]
pub struct RawBudget {
    pub ratio: Option<f64>,
    pub min_retries: Option<f64>,
    pub window_ms: Option<f64>,
}

impl RawBudget {
    pub fn members(&self) -> Vec<Given> {
        vec![num(self.ratio), num(self.min_retries), num(self.window_ms)]
    }
}

/// `breaker` (`breaker::BREAKER`).
#[derive(Debug, Clone, Default)]
pub struct RawBreaker {
    pub window_ms: Option<f64>,
    pub min_samples: Option<f64>,
    pub failure_rate: Option<f64>,
    pub consecutive_failures: Toggle<f64>,
    pub open_ms: Option<f64>,
    pub max_open_ms: Option<f64>,
    pub half_open_probes: Option<f64>,
    pub mode: Option<String>,
    pub k: Option<f64>,
}

impl RawBreaker {
    pub fn members(&self) -> Vec<Given> {
        vec![
            num(self.window_ms),
            num(self.min_samples),
            num(self.failure_rate),
            match self.consecutive_failures {
                Toggle::Default => Given::Absent,
                Toggle::Off => Given::Off,
                Toggle::On(v) => Given::Num(v),
            },
            num(self.open_ms),
            num(self.max_open_ms),
            num(self.half_open_probes),
            text(&self.mode),
            num(self.k),
        ]
    }
}

/// `concurrency` (`limiter::CONCURRENCY`).
#[derive(Debug, Clone, Default)]
pub struct RawConcurrency {
    pub max: Option<f64>,
    pub queue: Option<f64>,
}

impl RawConcurrency {
    pub fn members(&self) -> Vec<Given> {
        vec![num(self.max), num(self.queue)]
    }
}

/// `storage` (`options::STORAGE`).
#[derive(Debug, Clone, Default)]
pub struct RawStorage {
    pub prefix: Option<String>,
    pub max_entry_bytes: Option<f64>,
}

impl RawStorage {
    pub fn members(&self) -> Vec<Given> {
        vec![text(&self.prefix), num(self.max_entry_bytes)]
    }
}

/// `hedge: { afterMs: number | 'p95', max }` (`options::HEDGE`).
#[derive(Debug, Clone, Default)]
pub struct RawHedge {
    pub after_ms: Option<f64>,
    /// `afterMs: 'p95'`.
    pub after_p95: bool,
    pub max: Option<f64>,
}

impl RawHedge {
    pub fn members(&self) -> Vec<Given> {
        let after = if self.after_p95 {
            Given::Text("p95".to_owned())
        } else {
            num(self.after_ms)
        };
        vec![after, num(self.max)]
    }
}

/// A client's options (`options::CLIENT`).
#[derive(Debug, Clone, Default)]
pub struct RawClientOptions {
    pub timeout_ms: Option<f64>,
    pub gateway_timeout_ms: Option<f64>,
    pub deadline_ms: Option<f64>,
    pub retry: Toggle<RawRetry>,
    pub budget: Toggle<RawBudget>,
    pub breaker: Toggle<RawBreaker>,
    pub concurrency: Toggle<RawConcurrency>,
    pub dedupe: Option<bool>,
    pub wait_for_online: Option<bool>,
    pub cross_tab: Option<bool>,
    pub rate_limit: Option<bool>,
    pub storage: Toggle<RawStorage>,
    pub hedge: Toggle<RawHedge>,
}

impl RawClientOptions {
    pub fn members(&self) -> Vec<Given> {
        vec![
            num(self.timeout_ms),
            num(self.gateway_timeout_ms),
            num(self.deadline_ms),
            group(&self.retry, RawRetry::members),
            group(&self.budget, RawBudget::members),
            group(&self.breaker, RawBreaker::members),
            group(&self.concurrency, RawConcurrency::members),
            flag(self.dedupe),
            flag(self.wait_for_online),
            flag(self.cross_tab),
            group(&self.hedge, RawHedge::members),
            flag(self.rate_limit),
            group(&self.storage, RawStorage::members),
        ]
    }
}

/// A call's options (`options::CALL`).
#[derive(Debug, Clone, Default)]
pub struct RawCallOptions {
    pub timeout_ms: Option<f64>,
    pub deadline_ms: Option<f64>,
    pub retry: Toggle<RawRetry>,
    pub wait_for_online: Option<bool>,
    pub hedge: Toggle<RawHedge>,
    pub rate_limit: Option<bool>,
}

impl RawCallOptions {
    pub fn members(&self) -> Vec<Given> {
        vec![
            num(self.timeout_ms),
            num(self.deadline_ms),
            group(&self.retry, RawRetry::members),
            flag(self.wait_for_online),
            group(&self.hedge, RawHedge::members),
            flag(self.rate_limit),
        ]
    }
}
