//! Options written as Rust structs, for Rust callers: the native tests and
//! the storm simulation (`tests/sim.rs`). Each turns into the members its
//! table reads (`options::CLIENT`, `CALL` and the sub-option tables), named
//! (the table's `...Members`), and goes through the same checks as what the
//! web side reads from JS. The wasm never builds one (none of this ships).

use super::breaker::BreakerMembers;
use super::budget::BudgetMembers;
use super::limiter::ConcurrencyMembers;
use super::option_table::Given;
use super::options::{
    CallConfig, CallMembers, ClientConfig, ClientMembers, HedgeMembers, Host, OptionsError,
    StorageMembers,
};
use super::retry::RetryMembers;

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
        RetryMembers {
            max_attempts: num(self.max_attempts),
            base_delay_ms: num(self.base_delay_ms),
            max_delay_ms: num(self.max_delay_ms),
            jitter: text(&self.jitter),
            statuses: self.statuses.clone().map_or(Given::Absent, Given::Nums),
            methods: self.methods.clone().map_or(Given::Absent, Given::Texts),
            retry_after: flag(self.retry_after),
            max_retry_after_ms: num(self.max_retry_after_ms),
        }
        .into_vec()
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
        BudgetMembers {
            ratio: num(self.ratio),
            min_retries: num(self.min_retries),
            window_ms: num(self.window_ms),
        }
        .into_vec()
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
        BreakerMembers {
            window_ms: num(self.window_ms),
            min_samples: num(self.min_samples),
            failure_rate: num(self.failure_rate),
            consecutive_failures: match self.consecutive_failures {
                Toggle::Default => Given::Absent,
                Toggle::Off => Given::Off,
                Toggle::On(v) => Given::Num(v),
            },
            open_ms: num(self.open_ms),
            max_open_ms: num(self.max_open_ms),
            half_open_probes: num(self.half_open_probes),
            mode: text(&self.mode),
            k: num(self.k),
        }
        .into_vec()
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
        ConcurrencyMembers {
            max: num(self.max),
            queue: num(self.queue),
        }
        .into_vec()
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
        StorageMembers {
            prefix: text(&self.prefix),
            max_entry_bytes: num(self.max_entry_bytes),
        }
        .into_vec()
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
        HedgeMembers {
            after_ms: after,
            max: num(self.max),
        }
        .into_vec()
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
        ClientMembers {
            timeout_ms: num(self.timeout_ms),
            gateway_timeout_ms: num(self.gateway_timeout_ms),
            deadline_ms: num(self.deadline_ms),
            retry: group(&self.retry, RawRetry::members),
            budget: group(&self.budget, RawBudget::members),
            breaker: group(&self.breaker, RawBreaker::members),
            concurrency: group(&self.concurrency, RawConcurrency::members),
            dedupe: flag(self.dedupe),
            wait_for_online: flag(self.wait_for_online),
            cross_tab: flag(self.cross_tab),
            hedge: group(&self.hedge, RawHedge::members),
            rate_limit: flag(self.rate_limit),
            storage: group(&self.storage, RawStorage::members),
        }
        .into_vec()
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
        CallMembers {
            timeout_ms: num(self.timeout_ms),
            deadline_ms: num(self.deadline_ms),
            retry: group(&self.retry, RawRetry::members),
            wait_for_online: flag(self.wait_for_online),
            hedge: group(&self.hedge, RawHedge::members),
            rate_limit: flag(self.rate_limit),
        }
        .into_vec()
    }
}

impl ClientConfig {
    /// [`ClientConfig::from_members`] of options written in Rust, in a page.
    pub fn from_raw(raw: &RawClientOptions) -> Result<ClientConfig, OptionsError> {
        Self::from_members(&raw.members(), Host::Page)
    }

    /// [`ClientConfig::extend_members`] of options written in Rust.
    pub fn extended(&self, raw: &RawClientOptions) -> Result<ClientConfig, OptionsError> {
        self.extend_members(&raw.members())
    }
}

impl CallConfig {
    /// [`CallConfig::resolve_members`] of options written in Rust.
    pub fn resolve(
        client: &ClientConfig,
        raw: &RawCallOptions,
    ) -> Result<CallConfig, OptionsError> {
        Self::resolve_members(client, &raw.members())
    }
}
