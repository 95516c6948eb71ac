//! Configuration: raw inputs as the user wrote them, and validated configs
//! with API.md's defaults filled in.
//!
//! Why validate once, up front: a bad number found mid-request would fail a
//! call the user already made (or worse, panic the wasm module); found at
//! `createClient` it is one clear `OptionsError` naming the option. After
//! this module every policy can trust its numbers.
//!
//! Rules beyond API.md's list, each the reading a user would expect:
//! * `budget.windowMs` and `breaker.windowMs` are at least 1 (a window of
//!   0 ms holds nothing to count);
//! * `breaker.maxOpenMs` must be >= `openMs`; when absent it is
//!   `max(2000, openMs)`, so raising `openMs` alone is valid;
//! * `breaker.consecutiveFailures` is a count or `false` (off); absent, it
//!   is the default 3;
//! * `storage.maxEntryBytes` is an integer >= 1;
//! * every integer option is at most 2^31-1;
//! * `retry.statuses` and `retry.methods` may be empty lists (retry nothing;
//!   retry only calls with an idempotency key); each method must be an HTTP
//!   token and is kept uppercased;
//! * `gatewayTimeoutMs` is a timeout (> 0) and derives
//!   `timeoutMs = ceil(1.2 * g)`, computed exactly as `ceil(6g / 5)`.

use crate::text::{cat, decimal};
use std::fmt;

/// The largest duration accepted, 2^31-1 ms (about 24.8 days): the longest
/// delay `setTimeout` honours.
pub const MAX_DURATION_MS: f64 = 2_147_483_647.0;

/// Retryable statuses by default, and the breaker's failures when `retry` is off.
pub const DEFAULT_STATUSES: [u16; 6] = [408, 429, 500, 502, 503, 504];

const DEFAULT_METHODS: [&str; 5] = ["GET", "HEAD", "OPTIONS", "PUT", "DELETE"];

/// An invalid option: `option` is its camelCase dotted path
/// (`"retry.maxAttempts"`), `reason` a short sentence that never repeats the input.
#[derive(Debug, Clone, PartialEq)]
pub struct OptionsError {
    pub option: String,
    pub reason: String,
}

impl fmt::Display for OptionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid option {}: {}", self.option, self.reason)
    }
}

impl std::error::Error for OptionsError {}

impl OptionsError {
    /// The one way to build one, core and web side alike.
    pub fn new(option: &str, reason: &str) -> OptionsError {
        OptionsError {
            option: option.to_owned(),
            reason: reason.to_owned(),
        }
    }
}

type Result<T> = std::result::Result<T, OptionsError>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    Full,
    Equal,
    Decorrelated,
    None,
}

impl Jitter {
    /// The option's names, case-sensitive as in the TypeScript type.
    pub fn parse(name: &str) -> Option<Jitter> {
        match name {
            "full" => Some(Jitter::Full),
            "equal" => Some(Jitter::Equal),
            "decorrelated" => Some(Jitter::Decorrelated),
            "none" => Some(Jitter::None),
            _ => None,
        }
    }
}

/// An option that may be absent (defaults), `false` (off) or a value: a
/// sub-option object, or `breaker.consecutiveFailures`'s count.
#[derive(Debug, Clone, Default)]
pub enum Toggle<T> {
    #[default]
    Default,
    Off,
    On(T),
}

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

#[derive(Debug, Clone, Default)]
pub struct RawBudget {
    pub ratio: Option<f64>,
    pub min_retries: Option<f64>,
    pub window_ms: Option<f64>,
}

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

#[derive(Debug, Clone, Default)]
pub struct RawConcurrency {
    pub max: Option<f64>,
    pub queue: Option<f64>,
}

#[derive(Debug, Clone, Default)]
pub struct RawStorage {
    pub prefix: Option<String>,
    pub max_entry_bytes: Option<f64>,
}

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

#[derive(Debug, Clone, Default)]
pub struct RawCallOptions {
    pub timeout_ms: Option<f64>,
    pub deadline_ms: Option<f64>,
    pub retry: Toggle<RawRetry>,
    pub wait_for_online: Option<bool>,
    pub hedge: Toggle<RawHedge>,
    pub rate_limit: Option<bool>,
}

/// `hedge: { afterMs: number | 'p95', max }` as given.
#[derive(Debug, Clone, Default)]
pub struct RawHedge {
    pub after_ms: Option<f64>,
    /// `afterMs: 'p95'`.
    pub after_p95: bool,
    pub max: Option<f64>,
}

/// When a hedge goes out: a fixed time after the attempt started, or the
/// endpoint's observed 95th percentile latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HedgeAfter {
    Ms(f64),
    P95,
}

/// Hedged requests: a further attempt of an idempotent call whose attempt
/// has not answered by `after`, at most `max` per call (over all its
/// rounds; each hedge an attempt toward `maxAttempts`). Off by default.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HedgeConfig {
    pub after: HedgeAfter,
    pub max: u32,
}

/// Hedges per call, at most.
pub const MAX_HEDGES: f64 = 9.0;

impl HedgeConfig {
    /// `raw` over `base` (the client's, for a call's override): `afterMs`
    /// must come from one of them.
    fn from_raw(raw: &RawHedge, base: Option<HedgeConfig>) -> Result<HedgeConfig> {
        let after = match (raw.after_p95, raw.after_ms, base) {
            (true, _, _) => HedgeAfter::P95,
            (false, Some(ms), _) => HedgeAfter::Ms(duration("hedge.afterMs", ms, 0.0)?),
            (false, None, Some(b)) => b.after,
            (false, None, None) => {
                return Err(OptionsError::new(
                    "hedge.afterMs",
                    "is required (a number or 'p95')",
                ))
            }
        };
        let max = or(raw.max, base.map_or(1, |b| b.max), |v| {
            count("hedge.max", v, 1.0, MAX_HEDGES)
        })?;
        Ok(HedgeConfig { after, max })
    }

    fn resolve(raw: &Toggle<RawHedge>, base: Option<HedgeConfig>) -> Result<Option<HedgeConfig>> {
        match raw {
            Toggle::Default => Ok(base),
            Toggle::Off => Ok(None),
            Toggle::On(h) => HedgeConfig::from_raw(h, base).map(Some),
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

    /// `raw`'s fields over `self`'s.
    fn merged(&self, raw: &RawRetry) -> Result<Self> {
        let statuses = match &raw.statuses {
            None => self.statuses.clone(),
            Some(list) => list.iter().map(|&s| status(s)).collect::<Result<_>>()?,
        };
        let methods = match &raw.methods {
            None => self.methods.clone(),
            Some(list) => list.iter().map(|m| method(m)).collect::<Result<_>>()?,
        };
        let jitter = match &raw.jitter {
            None => self.jitter,
            Some(name) => Jitter::parse(name).ok_or_else(|| {
                OptionsError::new(
                    "retry.jitter",
                    "must be 'full', 'equal', 'decorrelated' or 'none'",
                )
            })?,
        };
        Ok(Self {
            max_attempts: or(raw.max_attempts, self.max_attempts, |v| {
                count("retry.maxAttempts", v, 1.0, 10.0)
            })?,
            base_delay_ms: or(raw.base_delay_ms, self.base_delay_ms, |v| {
                duration("retry.baseDelayMs", v, 0.0)
            })?,
            max_delay_ms: or(raw.max_delay_ms, self.max_delay_ms, |v| {
                duration("retry.maxDelayMs", v, 0.0)
            })?,
            jitter,
            statuses,
            methods,
            retry_after: raw.retry_after.unwrap_or(self.retry_after),
            max_retry_after_ms: or(raw.max_retry_after_ms, self.max_retry_after_ms, |v| {
                duration("retry.maxRetryAfterMs", v, 0.0)
            })?,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct BudgetConfig {
    pub ratio: f64,
    pub min_retries: u32,
    pub window_ms: f64,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        Self {
            ratio: 0.1,
            min_retries: 3,
            window_ms: 10_000.0,
        }
    }
}

impl BudgetConfig {
    fn from_raw(raw: &RawBudget) -> Result<Self> {
        let d = Self::default();
        Ok(Self {
            ratio: or(raw.ratio, d.ratio, |v| {
                in_range("budget.ratio", v, 0.0, 1.0, "must be from 0 to 1")
            })?,
            min_retries: or(raw.min_retries, d.min_retries, |v| {
                count("budget.minRetries", v, 0.0, MAX_DURATION_MS)
            })?,
            window_ms: or(raw.window_ms, d.window_ms, |v| {
                duration("budget.windowMs", v, 1.0)
            })?,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct BreakerConfig {
    pub window_ms: f64,
    pub min_samples: u32,
    pub failure_rate: f64,
    pub consecutive_failures: Option<u32>,
    pub open_ms: f64,
    pub max_open_ms: f64,
    pub half_open_probes: u32,
    /// `mode: 'adaptive'`: client-side throttling with this `k` instead of
    /// an open/closed circuit (see breaker.rs); None for `'binary'`.
    pub adaptive_k: Option<f64>,
}

/// Default `k` of adaptive throttling: the SRE book's suggestion.
pub const DEFAULT_ADAPTIVE_K: f64 = 2.0;

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            window_ms: 60_000.0,
            min_samples: 10,
            failure_rate: 0.5,
            consecutive_failures: Some(3),
            open_ms: 2000.0,
            max_open_ms: 2000.0,
            half_open_probes: 1,
            adaptive_k: None,
        }
    }
}

impl BreakerConfig {
    fn from_raw(raw: &RawBreaker) -> Result<Self> {
        let d = Self::default();
        let open_ms = or(raw.open_ms, d.open_ms, |v| {
            duration("breaker.openMs", v, 0.0)
        })?;
        let max_open_ms = match raw.max_open_ms {
            None => d.max_open_ms.max(open_ms),
            Some(v) => {
                let v = duration("breaker.maxOpenMs", v, 0.0)?;
                if v < open_ms {
                    return Err(OptionsError::new(
                        "breaker.maxOpenMs",
                        "must be at least openMs",
                    ));
                }
                v
            }
        };
        Ok(Self {
            window_ms: or(raw.window_ms, d.window_ms, |v| {
                duration("breaker.windowMs", v, 1.0)
            })?,
            min_samples: or(raw.min_samples, d.min_samples, |v| {
                count("breaker.minSamples", v, 1.0, MAX_DURATION_MS)
            })?,
            failure_rate: or(raw.failure_rate, d.failure_rate, |v| {
                let v = in_range(
                    "breaker.failureRate",
                    v,
                    0.0,
                    1.0,
                    "must be above 0 and at most 1",
                )?;
                if v > 0.0 {
                    Ok(v)
                } else {
                    Err(OptionsError::new(
                        "breaker.failureRate",
                        "must be above 0 and at most 1",
                    ))
                }
            })?,
            consecutive_failures: match raw.consecutive_failures {
                Toggle::Default => d.consecutive_failures,
                Toggle::Off => None,
                Toggle::On(v) => Some(count(
                    "breaker.consecutiveFailures",
                    v,
                    1.0,
                    MAX_DURATION_MS,
                )?),
            },
            open_ms,
            max_open_ms,
            half_open_probes: or(raw.half_open_probes, d.half_open_probes, |v| {
                count("breaker.halfOpenProbes", v, 1.0, MAX_DURATION_MS)
            })?,
            adaptive_k: match raw.mode.as_deref() {
                None | Some("binary") => None,
                Some("adaptive") => Some(or(raw.k, DEFAULT_ADAPTIVE_K, |v| {
                    // k < 1 would shed load from a backend that accepts everything.
                    in_range("breaker.k", v, 1.0, 100.0, "must be from 1 to 100")
                })?),
                Some(_) => {
                    return Err(OptionsError::new(
                        "breaker.mode",
                        "must be 'binary' or 'adaptive'",
                    ))
                }
            },
        })
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
    fn from_raw(raw: &RawConcurrency) -> Result<Self> {
        let d = Self::default();
        Ok(Self {
            max: or(raw.max, d.max, |v| {
                count("concurrency.max", v, 1.0, MAX_DURATION_MS)
            })?,
            queue: or(raw.queue, d.queue, |v| {
                count("concurrency.queue", v, 0.0, MAX_DURATION_MS)
            })?,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct StorageConfig {
    pub prefix: String,
    pub max_entry_bytes: u32,
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            prefix: "stormguard:".to_owned(),
            max_entry_bytes: 262_144,
        }
    }
}

impl StorageConfig {
    fn from_raw(raw: &RawStorage) -> Result<Self> {
        let d = Self::default();
        Ok(Self {
            prefix: raw.prefix.clone().unwrap_or(d.prefix),
            max_entry_bytes: or(raw.max_entry_bytes, d.max_entry_bytes, |v| {
                count("storage.maxEntryBytes", v, 1.0, MAX_DURATION_MS)
            })?,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ClientConfig {
    pub timeout_ms: f64,
    pub deadline_ms: f64,
    /// `None` when `retry: false`.
    pub retry: Option<RetryConfig>,
    pub budget: Option<BudgetConfig>,
    pub breaker: Option<BreakerConfig>,
    pub concurrency: Option<LimiterConfig>,
    pub dedupe: bool,
    /// While the host reports no network, wait for it within the deadline
    /// (true) or fail at once (false); either way no attempt is spent.
    pub wait_for_online: bool,
    /// Share breaker transitions and Retry-After cooldowns with the other
    /// tabs of the origin (where the host has BroadcastChannel).
    pub cross_tab: bool,
    /// Obey the quota servers announce in rate-limit fields: hold a key
    /// whose quota is spent until its reset, space calls while it is low.
    pub rate_limit: bool,
    pub storage: Option<StorageConfig>,
    /// `None` (the default) or `hedge: false`: no hedged requests.
    pub hedge: Option<HedgeConfig>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            timeout_ms: 6000.0,
            deadline_ms: 20_000.0,
            retry: Some(RetryConfig::default()),
            budget: Some(BudgetConfig::default()),
            breaker: Some(BreakerConfig::default()),
            concurrency: Some(LimiterConfig::default()),
            dedupe: true,
            wait_for_online: true,
            cross_tab: true,
            rate_limit: true,
            storage: Some(StorageConfig::default()),
            hedge: None,
        }
    }
}

impl ClientConfig {
    pub fn from_raw(raw: &RawClientOptions) -> Result<ClientConfig> {
        let d = Self::default();
        Ok(Self {
            timeout_ms: timeout(raw, d.timeout_ms)?,
            deadline_ms: or(raw.deadline_ms, d.deadline_ms, |v| {
                duration("deadlineMs", v, 1.0)
            })?,
            retry: toggle(&raw.retry, |r| RetryConfig::default().merged(r))?,
            budget: toggle(&raw.budget, BudgetConfig::from_raw)?,
            breaker: toggle(&raw.breaker, BreakerConfig::from_raw)?,
            concurrency: toggle(&raw.concurrency, LimiterConfig::from_raw)?,
            dedupe: raw.dedupe.unwrap_or(d.dedupe),
            wait_for_online: raw.wait_for_online.unwrap_or(d.wait_for_online),
            cross_tab: raw.cross_tab.unwrap_or(d.cross_tab),
            rate_limit: raw.rate_limit.unwrap_or(d.rate_limit),
            storage: toggle(&raw.storage, StorageConfig::from_raw)?,
            hedge: HedgeConfig::resolve(&raw.hedge, None)?,
        })
    }

    /// A derived client's settings (`client.extend(raw)`): `raw` over
    /// these, as a call's options are (`retry` merged field by field).
    /// What the derived client shares with its parent (budget, breakers,
    /// concurrency, storage, the cross-tab link) cannot be set.
    pub fn extended(&self, raw: &RawClientOptions) -> Result<ClientConfig> {
        let shared = [
            ("budget", !matches!(raw.budget, Toggle::Default)),
            ("breaker", !matches!(raw.breaker, Toggle::Default)),
            ("concurrency", !matches!(raw.concurrency, Toggle::Default)),
            ("storage", !matches!(raw.storage, Toggle::Default)),
            ("crossTab", raw.cross_tab.is_some()),
        ];
        if let Some((name, _)) = shared.iter().find(|(_, set)| *set) {
            return Err(OptionsError::new(
                name,
                "cannot be changed in extend(): a derived client shares its parent's",
            ));
        }
        let call = CallConfig::resolve(
            self,
            &RawCallOptions {
                timeout_ms: None,
                deadline_ms: raw.deadline_ms,
                retry: raw.retry.clone(),
                wait_for_online: raw.wait_for_online,
                hedge: raw.hedge.clone(),
                rate_limit: raw.rate_limit,
            },
        )?;
        Ok(ClientConfig {
            timeout_ms: timeout(raw, self.timeout_ms)?,
            deadline_ms: call.deadline_ms,
            retry: call.retry,
            dedupe: raw.dedupe.unwrap_or(self.dedupe),
            wait_for_online: call.wait_for_online,
            rate_limit: call.rate_limit,
            hedge: call.hedge,
            ..self.clone()
        })
    }

    /// Statuses the breaker counts as failures: `retry.statuses`, or the
    /// default list when retry is off.
    pub fn failure_statuses(&self) -> &[u16] {
        self.retry
            .as_ref()
            .map_or(DEFAULT_STATUSES.as_slice(), |r| r.statuses.as_slice())
    }
}

/// One call's settings: the client's, with the call's options over them.
#[derive(Debug, Clone, PartialEq)]
pub struct CallConfig {
    pub timeout_ms: f64,
    pub deadline_ms: f64,
    pub retry: Option<RetryConfig>,
    pub wait_for_online: bool,
    pub hedge: Option<HedgeConfig>,
    pub rate_limit: bool,
}

impl CallConfig {
    /// A call's `retry` object is merged field by field over the client's
    /// (over the defaults when the client has `retry: false`); `retry: false`
    /// turns retries off for this call.
    pub fn resolve(client: &ClientConfig, raw: &RawCallOptions) -> Result<CallConfig> {
        Ok(Self {
            timeout_ms: or(raw.timeout_ms, client.timeout_ms, |v| {
                duration("timeoutMs", v, 1.0)
            })?,
            deadline_ms: or(raw.deadline_ms, client.deadline_ms, |v| {
                duration("deadlineMs", v, 1.0)
            })?,
            retry: match &raw.retry {
                Toggle::Default => client.retry.clone(),
                Toggle::Off => None,
                Toggle::On(r) => Some(client.retry.clone().unwrap_or_default().merged(r)?),
            },
            wait_for_online: raw.wait_for_online.unwrap_or(client.wait_for_online),
            hedge: HedgeConfig::resolve(&raw.hedge, client.hedge)?,
            rate_limit: raw.rate_limit.unwrap_or(client.rate_limit),
        })
    }
}

/// `timeoutMs`, else one derived from `gatewayTimeoutMs`, else `default`.
fn timeout(raw: &RawClientOptions, default: f64) -> Result<f64> {
    let gateway = raw
        .gateway_timeout_ms
        .map(|v| duration("gatewayTimeoutMs", v, 1.0))
        .transpose()?;
    match (raw.timeout_ms, gateway) {
        (Some(v), _) => duration("timeoutMs", v, 1.0),
        (None, Some(g)) => {
            let derived = (g * 6.0 / 5.0).ceil();
            if derived > MAX_DURATION_MS {
                return Err(OptionsError::new(
                    "gatewayTimeoutMs",
                    "gives a timeoutMs above 2147483647",
                ));
            }
            Ok(derived)
        }
        (None, None) => Ok(default),
    }
}

fn toggle<R, C: Default>(
    raw: &Toggle<R>,
    build: impl FnOnce(&R) -> Result<C>,
) -> Result<Option<C>> {
    match raw {
        Toggle::Default => Ok(Some(C::default())),
        Toggle::Off => Ok(None),
        Toggle::On(r) => build(r).map(Some),
    }
}

/// `check(value)` when given, else `default`.
fn or<T>(value: Option<f64>, default: T, check: impl FnOnce(f64) -> Result<T>) -> Result<T> {
    value.map_or(Ok(default), check)
}

fn finite(option: &str, v: f64) -> Result<f64> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(OptionsError::new(option, "must be a finite number"))
    }
}

fn in_range(option: &str, v: f64, min: f64, max: f64, reason: &str) -> Result<f64> {
    let v = finite(option, v)?;
    if (min..=max).contains(&v) {
        Ok(v)
    } else {
        Err(OptionsError::new(option, reason))
    }
}

fn integer(option: &str, v: f64, min: f64, max: f64) -> Result<f64> {
    let v = finite(option, v)?;
    if v.fract() == 0.0 && (min..=max).contains(&v) {
        Ok(v)
    } else {
        Err(OptionsError::new(
            option,
            &cat(&[
                "must be an integer from ",
                &decimal(min as u64),
                " to ",
                &decimal(max as u64),
            ]),
        ))
    }
}

/// Milliseconds: an integer from `min` to 2^31-1.
fn duration(option: &str, v: f64, min: f64) -> Result<f64> {
    integer(option, v, min, MAX_DURATION_MS)
}

/// An integer from `min` to `max` (`max` <= 2^31-1), as u32.
fn count(option: &str, v: f64, min: f64, max: f64) -> Result<u32> {
    integer(option, v, min, max).map(|v| v as u32)
}

fn status(v: f64) -> Result<u16> {
    if v.is_finite() && v.fract() == 0.0 && (100.0..=599.0).contains(&v) {
        Ok(v as u16)
    } else {
        Err(OptionsError::new(
            "retry.statuses",
            "must hold integers from 100 to 599",
        ))
    }
}

/// An RFC 9110 token (one or more `tchar`s): what a method name must be,
/// for the `method` option and for `retry.methods` alike.
pub fn is_token(s: &str) -> bool {
    let tchar = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    !s.is_empty() && s.bytes().all(tchar)
}

/// An HTTP method token (RFC 9110 `tchar`s), uppercased.
fn method(m: &str) -> Result<String> {
    if is_token(m) {
        Ok(m.to_ascii_uppercase())
    } else {
        Err(OptionsError::new(
            "retry.methods",
            "must hold HTTP method names",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(raw: RawClientOptions) -> Result<ClientConfig> {
        ClientConfig::from_raw(&raw)
    }

    #[test]
    fn extend_merges_over_the_parent_and_refuses_what_it_shares() {
        let parent = client(RawClientOptions {
            timeout_ms: Some(1000.0),
            retry: Toggle::On(RawRetry {
                max_attempts: Some(5.0),
                ..Default::default()
            }),
            breaker: Toggle::Off,
            ..Default::default()
        })
        .unwrap();
        let child = parent
            .extended(&RawClientOptions {
                deadline_ms: Some(3000.0),
                retry: Toggle::On(RawRetry {
                    base_delay_ms: Some(10.0),
                    ..Default::default()
                }),
                dedupe: Some(false),
                ..Default::default()
            })
            .unwrap();
        let r = child.retry.clone().unwrap();
        assert_eq!((r.max_attempts, r.base_delay_ms), (5, 10.0), "merged");
        assert_eq!((child.timeout_ms, child.deadline_ms), (1000.0, 3000.0));
        assert!(
            !child.dedupe && child.breaker.is_none(),
            "the rest is the parent's"
        );
        // nothing given: the parent's settings as they are
        assert_eq!(
            format!(
                "{:?}",
                parent.extended(&RawClientOptions::default()).unwrap()
            ),
            format!("{parent:?}")
        );
        let gateway = parent
            .extended(&RawClientOptions {
                gateway_timeout_ms: Some(5000.0),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(gateway.timeout_ms, 6000.0);
        let off = parent
            .extended(&RawClientOptions {
                retry: Toggle::Off,
                ..Default::default()
            })
            .unwrap();
        assert!(off.retry.is_none());
        // the shared protection cannot be changed, nor bad values given
        let refused = |raw: RawClientOptions| parent.extended(&raw).unwrap_err().option;
        assert_eq!(
            refused(RawClientOptions {
                budget: Toggle::Off,
                ..Default::default()
            }),
            "budget"
        );
        assert_eq!(
            refused(RawClientOptions {
                breaker: Toggle::On(RawBreaker::default()),
                ..Default::default()
            }),
            "breaker"
        );
        assert_eq!(
            refused(RawClientOptions {
                concurrency: Toggle::Off,
                ..Default::default()
            }),
            "concurrency"
        );
        assert_eq!(
            refused(RawClientOptions {
                storage: Toggle::Off,
                ..Default::default()
            }),
            "storage"
        );
        assert_eq!(
            refused(RawClientOptions {
                cross_tab: Some(true),
                ..Default::default()
            }),
            "crossTab"
        );
        assert_eq!(
            refused(RawClientOptions {
                timeout_ms: Some(0.0),
                ..Default::default()
            }),
            "timeoutMs"
        );
    }

    fn retry(raw: RawRetry) -> Result<ClientConfig> {
        client(RawClientOptions {
            retry: Toggle::On(raw),
            ..Default::default()
        })
    }

    fn budget(raw: RawBudget) -> Result<ClientConfig> {
        client(RawClientOptions {
            budget: Toggle::On(raw),
            ..Default::default()
        })
    }

    fn breaker(raw: RawBreaker) -> Result<ClientConfig> {
        client(RawClientOptions {
            breaker: Toggle::On(raw),
            ..Default::default()
        })
    }

    fn concurrency(raw: RawConcurrency) -> Result<ClientConfig> {
        client(RawClientOptions {
            concurrency: Toggle::On(raw),
            ..Default::default()
        })
    }

    fn storage(raw: RawStorage) -> Result<ClientConfig> {
        client(RawClientOptions {
            storage: Toggle::On(raw),
            ..Default::default()
        })
    }

    #[track_caller]
    fn rejects(result: Result<ClientConfig>, option: &str) {
        match result {
            Err(e) => {
                assert_eq!(e.option, option);
                assert!(!e.reason.is_empty() && e.reason.len() < 80, "{}", e.reason);
            }
            Ok(c) => panic!("{option} accepted: {c:?}"),
        }
    }

    const NOT_FINITE: [f64; 3] = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY];

    #[test]
    fn empty_options_give_api_defaults() {
        let c = client(RawClientOptions::default()).unwrap();
        assert_eq!(c, ClientConfig::default());
        assert_eq!(c.timeout_ms, 6000.0);
        assert_eq!(c.deadline_ms, 20_000.0);
        let r = c.retry.as_ref().unwrap();
        assert_eq!(r.max_attempts, 3);
        assert_eq!((r.base_delay_ms, r.max_delay_ms), (1000.0, 8000.0));
        assert_eq!(r.jitter, Jitter::Full);
        assert_eq!(r.statuses, vec![408, 429, 500, 502, 503, 504]);
        assert_eq!(r.methods, vec!["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);
        assert!(r.retry_after);
        assert_eq!(r.max_retry_after_ms, 30_000.0);
        let b = c.budget.as_ref().unwrap();
        assert_eq!((b.ratio, b.min_retries, b.window_ms), (0.1, 3, 10_000.0));
        let br = c.breaker.as_ref().unwrap();
        assert_eq!(br.window_ms, 60_000.0);
        assert_eq!(br.min_samples, 10);
        assert_eq!(br.failure_rate, 0.5);
        assert_eq!(br.consecutive_failures, Some(3));
        assert_eq!((br.open_ms, br.max_open_ms), (2000.0, 2000.0));
        assert_eq!(br.half_open_probes, 1);
        assert_eq!(c.concurrency, Some(LimiterConfig { max: 6, queue: 100 }));
        assert!(c.dedupe);
        assert!(c.rate_limit);
        let s = c.storage.as_ref().unwrap();
        assert_eq!(
            (s.prefix.as_str(), s.max_entry_bytes),
            ("stormguard:", 262_144)
        );
    }

    #[test]
    fn empty_sub_objects_give_defaults_too() {
        let c = client(RawClientOptions {
            retry: Toggle::On(RawRetry::default()),
            budget: Toggle::On(RawBudget::default()),
            breaker: Toggle::On(RawBreaker::default()),
            concurrency: Toggle::On(RawConcurrency::default()),
            storage: Toggle::On(RawStorage::default()),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(c, ClientConfig::default());
    }

    #[test]
    fn false_turns_sub_options_off() {
        let c = client(RawClientOptions {
            retry: Toggle::Off,
            budget: Toggle::Off,
            breaker: Toggle::Off,
            concurrency: Toggle::Off,
            storage: Toggle::Off,
            dedupe: Some(false),
            rate_limit: Some(false),
            ..Default::default()
        })
        .unwrap();
        assert!(!c.rate_limit);
        assert_eq!(c.retry, None);
        assert_eq!(c.budget, None);
        assert_eq!(c.breaker, None);
        assert_eq!(c.concurrency, None);
        assert_eq!(c.storage, None);
        assert!(!c.dedupe);
        assert_eq!(c.failure_statuses(), DEFAULT_STATUSES);
    }

    #[test]
    fn failure_statuses_follow_retry_statuses() {
        let c = retry(RawRetry {
            statuses: Some(vec![503.0]),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(c.failure_statuses(), [503]);
    }

    #[test]
    fn retry_off_keeps_default_statuses() {
        let off = RetryConfig::off();
        assert_eq!(off.max_attempts, 1);
        assert_eq!(off.statuses, DEFAULT_STATUSES);
    }

    #[test]
    fn timeouts_and_deadlines() {
        let c = client(RawClientOptions {
            timeout_ms: Some(1.0),
            deadline_ms: Some(MAX_DURATION_MS),
            ..Default::default()
        })
        .unwrap();
        assert_eq!((c.timeout_ms, c.deadline_ms), (1.0, MAX_DURATION_MS));
        for bad in [0.0, -1.0, 1.5, MAX_DURATION_MS + 1.0]
            .into_iter()
            .chain(NOT_FINITE)
        {
            rejects(
                client(RawClientOptions {
                    timeout_ms: Some(bad),
                    ..Default::default()
                }),
                "timeoutMs",
            );
            rejects(
                client(RawClientOptions {
                    deadline_ms: Some(bad),
                    ..Default::default()
                }),
                "deadlineMs",
            );
        }
    }

    #[test]
    fn gateway_timeout_derives_timeout() {
        let gw = |g: f64, t: Option<f64>| {
            client(RawClientOptions {
                gateway_timeout_ms: Some(g),
                timeout_ms: t,
                ..Default::default()
            })
        };
        assert_eq!(gw(5000.0, None).unwrap().timeout_ms, 6000.0);
        assert_eq!(gw(1.0, None).unwrap().timeout_ms, 2.0);
        assert_eq!(gw(3.0, None).unwrap().timeout_ms, 4.0);
        assert_eq!(gw(10.0, None).unwrap().timeout_ms, 12.0);
        assert_eq!(gw(5000.0, Some(100.0)).unwrap().timeout_ms, 100.0);
        // 1_789_569_706 * 1.2 = 2_147_483_647.2 -> ceil passes 2^31-1.
        assert_eq!(
            gw(1_789_569_705.0, None).unwrap().timeout_ms,
            2_147_483_646.0
        );
        rejects(gw(1_789_569_706.0, None), "gatewayTimeoutMs");
        rejects(gw(MAX_DURATION_MS, None), "gatewayTimeoutMs");
        for bad in [0.0, -5.0, 2.5, f64::NAN] {
            rejects(gw(bad, None), "gatewayTimeoutMs");
            rejects(gw(bad, Some(100.0)), "gatewayTimeoutMs");
        }
    }

    #[test]
    fn max_attempts_is_1_to_10() {
        for ok in [1.0, 10.0] {
            let c = retry(RawRetry {
                max_attempts: Some(ok),
                ..Default::default()
            });
            assert_eq!(c.unwrap().retry.unwrap().max_attempts, ok as u32);
        }
        for bad in [0.0, 11.0, 2.5, -1.0].into_iter().chain(NOT_FINITE) {
            rejects(
                retry(RawRetry {
                    max_attempts: Some(bad),
                    ..Default::default()
                }),
                "retry.maxAttempts",
            );
        }
    }

    #[test]
    fn retry_durations_are_integers_from_0() {
        let c = retry(RawRetry {
            base_delay_ms: Some(0.0),
            max_delay_ms: Some(0.0),
            max_retry_after_ms: Some(MAX_DURATION_MS),
            ..Default::default()
        })
        .unwrap()
        .retry
        .unwrap();
        assert_eq!((c.base_delay_ms, c.max_delay_ms), (0.0, 0.0));
        assert_eq!(c.max_retry_after_ms, MAX_DURATION_MS);
        for bad in [-1.0, 0.5, MAX_DURATION_MS + 1.0]
            .into_iter()
            .chain(NOT_FINITE)
        {
            let cases = [
                (
                    RawRetry {
                        base_delay_ms: Some(bad),
                        ..Default::default()
                    },
                    "retry.baseDelayMs",
                ),
                (
                    RawRetry {
                        max_delay_ms: Some(bad),
                        ..Default::default()
                    },
                    "retry.maxDelayMs",
                ),
                (
                    RawRetry {
                        max_retry_after_ms: Some(bad),
                        ..Default::default()
                    },
                    "retry.maxRetryAfterMs",
                ),
            ];
            for (raw, option) in cases {
                rejects(retry(raw), option);
            }
        }
    }

    #[test]
    fn jitter_names() {
        for (name, j) in [
            ("full", Jitter::Full),
            ("equal", Jitter::Equal),
            ("decorrelated", Jitter::Decorrelated),
            ("none", Jitter::None),
        ] {
            let c = retry(RawRetry {
                jitter: Some(name.into()),
                ..Default::default()
            });
            assert_eq!(c.unwrap().retry.unwrap().jitter, j);
        }
        for bad in ["", "Full", "exponential"] {
            rejects(
                retry(RawRetry {
                    jitter: Some(bad.into()),
                    ..Default::default()
                }),
                "retry.jitter",
            );
        }
    }

    #[test]
    fn statuses_are_integers_100_to_599() {
        let c = retry(RawRetry {
            statuses: Some(vec![100.0, 599.0]),
            ..Default::default()
        });
        assert_eq!(c.unwrap().retry.unwrap().statuses, vec![100, 599]);
        let empty = retry(RawRetry {
            statuses: Some(vec![]),
            ..Default::default()
        });
        assert!(empty.unwrap().retry.unwrap().statuses.is_empty());
        for bad in [99.0, 600.0, 503.5, -503.0].into_iter().chain(NOT_FINITE) {
            rejects(
                retry(RawRetry {
                    statuses: Some(vec![503.0, bad]),
                    ..Default::default()
                }),
                "retry.statuses",
            );
        }
    }

    #[test]
    fn methods_are_tokens_kept_uppercase() {
        let c = retry(RawRetry {
            methods: Some(vec!["get".into(), "Post".into(), "M-SEARCH".into()]),
            ..Default::default()
        });
        assert_eq!(
            c.unwrap().retry.unwrap().methods,
            vec!["GET", "POST", "M-SEARCH"]
        );
        for bad in ["", "GET POST", "GÉT", "a,b", "x\n"] {
            rejects(
                retry(RawRetry {
                    methods: Some(vec!["GET".into(), bad.into()]),
                    ..Default::default()
                }),
                "retry.methods",
            );
        }
    }

    #[test]
    fn huge_input_is_not_echoed() {
        let huge = "x y".repeat(100_000);
        let e = retry(RawRetry {
            methods: Some(vec![huge.clone()]),
            jitter: None,
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.reason.len() < 80 && e.to_string().len() < 120);
        let e = retry(RawRetry {
            jitter: Some(huge),
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.reason.len() < 80);
    }

    #[test]
    fn budget_rules() {
        let c = budget(RawBudget {
            ratio: Some(0.0),
            min_retries: Some(0.0),
            window_ms: Some(1.0),
        })
        .unwrap()
        .budget
        .unwrap();
        assert_eq!((c.ratio, c.min_retries, c.window_ms), (0.0, 0, 1.0));
        assert_eq!(
            budget(RawBudget {
                ratio: Some(1.0),
                ..Default::default()
            })
            .unwrap()
            .budget
            .unwrap()
            .ratio,
            1.0
        );
        for bad in [-0.1, 1.1].into_iter().chain(NOT_FINITE) {
            rejects(
                budget(RawBudget {
                    ratio: Some(bad),
                    ..Default::default()
                }),
                "budget.ratio",
            );
        }
        for bad in [-1.0, 1.5].into_iter().chain(NOT_FINITE) {
            rejects(
                budget(RawBudget {
                    min_retries: Some(bad),
                    ..Default::default()
                }),
                "budget.minRetries",
            );
        }
        for bad in [0.0, -1.0, 1.5, MAX_DURATION_MS + 1.0]
            .into_iter()
            .chain(NOT_FINITE)
        {
            rejects(
                budget(RawBudget {
                    window_ms: Some(bad),
                    ..Default::default()
                }),
                "budget.windowMs",
            );
        }
    }

    #[test]
    fn breaker_counts_are_integers_from_1() {
        let c = breaker(RawBreaker {
            min_samples: Some(1.0),
            consecutive_failures: Toggle::On(1.0),
            half_open_probes: Some(1.0),
            ..Default::default()
        })
        .unwrap()
        .breaker
        .unwrap();
        assert_eq!(
            (c.min_samples, c.consecutive_failures, c.half_open_probes),
            (1, Some(1), 1)
        );
        for bad in [0.0, -1.0, 2.5, MAX_DURATION_MS + 1.0]
            .into_iter()
            .chain(NOT_FINITE)
        {
            let cases = [
                (
                    RawBreaker {
                        min_samples: Some(bad),
                        ..Default::default()
                    },
                    "breaker.minSamples",
                ),
                (
                    RawBreaker {
                        consecutive_failures: Toggle::On(bad),
                        ..Default::default()
                    },
                    "breaker.consecutiveFailures",
                ),
                (
                    RawBreaker {
                        half_open_probes: Some(bad),
                        ..Default::default()
                    },
                    "breaker.halfOpenProbes",
                ),
                (
                    RawBreaker {
                        window_ms: Some(bad),
                        ..Default::default()
                    },
                    "breaker.windowMs",
                ),
            ];
            for (raw, option) in cases {
                rejects(breaker(raw), option);
            }
        }
    }

    #[test]
    fn consecutive_failures_defaults_to_3_and_false_turns_it_off() {
        let run = |t: Toggle<f64>| {
            breaker(RawBreaker {
                consecutive_failures: t,
                ..Default::default()
            })
            .unwrap()
            .breaker
            .unwrap()
            .consecutive_failures
        };
        assert_eq!(run(Toggle::Default), Some(3));
        assert_eq!(run(Toggle::Off), None);
        assert_eq!(run(Toggle::On(5.0)), Some(5));
        // `false` turns off only the count: the failure-rate rule stays on.
        let c = breaker(RawBreaker {
            consecutive_failures: Toggle::Off,
            ..Default::default()
        })
        .unwrap()
        .breaker
        .unwrap();
        assert_eq!((c.failure_rate, c.min_samples), (0.5, 10));
    }

    #[test]
    fn failure_rate_is_above_0_at_most_1() {
        let rate = |r: f64| {
            breaker(RawBreaker {
                failure_rate: Some(r),
                ..Default::default()
            })
        };
        assert_eq!(rate(1.0).unwrap().breaker.unwrap().failure_rate, 1.0);
        assert_eq!(rate(0.01).unwrap().breaker.unwrap().failure_rate, 0.01);
        for bad in [0.0, -0.5, 1.01].into_iter().chain(NOT_FINITE) {
            rejects(rate(bad), "breaker.failureRate");
        }
    }

    #[test]
    fn open_periods() {
        let open = |o: Option<f64>, m: Option<f64>| {
            breaker(RawBreaker {
                open_ms: o,
                max_open_ms: m,
                ..Default::default()
            })
        };
        let c = open(Some(0.0), Some(0.0)).unwrap().breaker.unwrap();
        assert_eq!((c.open_ms, c.max_open_ms), (0.0, 0.0));
        let c = open(Some(60_000.0), None).unwrap().breaker.unwrap();
        assert_eq!((c.open_ms, c.max_open_ms), (60_000.0, 60_000.0));
        let c = open(Some(1000.0), None).unwrap().breaker.unwrap();
        assert_eq!((c.open_ms, c.max_open_ms), (1000.0, 2000.0));
        let c = open(None, Some(30_000.0)).unwrap().breaker.unwrap();
        assert_eq!((c.open_ms, c.max_open_ms), (2000.0, 30_000.0));
        rejects(open(Some(6000.0), Some(5999.0)), "breaker.maxOpenMs");
        rejects(open(None, Some(1999.0)), "breaker.maxOpenMs");
        for bad in [-1.0, 0.5, MAX_DURATION_MS + 1.0]
            .into_iter()
            .chain(NOT_FINITE)
        {
            rejects(open(Some(bad), None), "breaker.openMs");
            rejects(open(None, Some(bad)), "breaker.maxOpenMs");
        }
    }

    #[test]
    fn concurrency_rules() {
        let c = concurrency(RawConcurrency {
            max: Some(1.0),
            queue: Some(0.0),
        })
        .unwrap();
        assert_eq!(c.concurrency, Some(LimiterConfig { max: 1, queue: 0 }));
        for bad in [0.0, -1.0, 1.5, MAX_DURATION_MS + 1.0]
            .into_iter()
            .chain(NOT_FINITE)
        {
            rejects(
                concurrency(RawConcurrency {
                    max: Some(bad),
                    ..Default::default()
                }),
                "concurrency.max",
            );
        }
        for bad in [-1.0, 1.5, MAX_DURATION_MS + 1.0]
            .into_iter()
            .chain(NOT_FINITE)
        {
            rejects(
                concurrency(RawConcurrency {
                    queue: Some(bad),
                    ..Default::default()
                }),
                "concurrency.queue",
            );
        }
    }

    #[test]
    fn storage_rules() {
        let c = storage(RawStorage {
            prefix: Some(String::new()),
            max_entry_bytes: Some(1.0),
        })
        .unwrap()
        .storage
        .unwrap();
        assert_eq!((c.prefix.as_str(), c.max_entry_bytes), ("", 1));
        for bad in [0.0, -1.0, 1.5, MAX_DURATION_MS + 1.0]
            .into_iter()
            .chain(NOT_FINITE)
        {
            rejects(
                storage(RawStorage {
                    max_entry_bytes: Some(bad),
                    ..Default::default()
                }),
                "storage.maxEntryBytes",
            );
        }
    }

    fn call(client: &ClientConfig, raw: RawCallOptions) -> Result<CallConfig> {
        CallConfig::resolve(client, &raw)
    }

    #[test]
    fn call_inherits_client_settings() {
        let c = retry(RawRetry {
            max_attempts: Some(5.0),
            ..Default::default()
        })
        .unwrap();
        let k = call(&c, RawCallOptions::default()).unwrap();
        assert_eq!((k.timeout_ms, k.deadline_ms), (6000.0, 20_000.0));
        assert_eq!(k.retry, c.retry);
        assert!(k.rate_limit);
        let off = ClientConfig {
            rate_limit: false,
            ..c
        };
        assert!(!call(&off, RawCallOptions::default()).unwrap().rate_limit);
    }

    #[test]
    fn hedge_is_off_by_default_and_checked_when_given() {
        let client = |h: Toggle<RawHedge>| {
            ClientConfig::from_raw(&RawClientOptions {
                hedge: h,
                ..Default::default()
            })
        };
        assert_eq!(client(Toggle::Default).unwrap().hedge, None);
        assert_eq!(client(Toggle::Off).unwrap().hedge, None);
        let on = |after_ms: Option<f64>, after_p95: bool, max: Option<f64>| {
            client(Toggle::On(RawHedge {
                after_ms,
                after_p95,
                max,
            }))
        };
        assert_eq!(
            on(Some(200.0), false, None).unwrap().hedge,
            Some(HedgeConfig {
                after: HedgeAfter::Ms(200.0),
                max: 1
            })
        );
        assert_eq!(
            on(None, true, Some(2.0)).unwrap().hedge,
            Some(HedgeConfig {
                after: HedgeAfter::P95,
                max: 2
            })
        );
        for (after, max, option) in [
            (None, None, "hedge.afterMs"),
            (Some(-1.0), None, "hedge.afterMs"),
            (Some(1.5), None, "hedge.afterMs"),
            (Some(f64::NAN), None, "hedge.afterMs"),
            (Some(10.0), Some(0.0), "hedge.max"),
            (Some(10.0), Some(10.0), "hedge.max"),
        ] {
            assert_eq!(on(after, false, max).unwrap_err().option, option);
        }
    }

    #[test]
    fn a_calls_hedge_goes_over_the_clients() {
        let c = ClientConfig::from_raw(&RawClientOptions {
            hedge: Toggle::On(RawHedge {
                after_ms: Some(100.0),
                max: Some(2.0),
                ..Default::default()
            }),
            ..Default::default()
        })
        .unwrap();
        let with = |h: Toggle<RawHedge>| {
            call(
                &c,
                RawCallOptions {
                    hedge: h,
                    ..Default::default()
                },
            )
            .unwrap()
            .hedge
        };
        assert_eq!(with(Toggle::Default), c.hedge);
        assert_eq!(with(Toggle::Off), None);
        let p95 = with(Toggle::On(RawHedge {
            after_p95: true,
            ..Default::default()
        }));
        assert_eq!(
            p95,
            Some(HedgeConfig {
                after: HedgeAfter::P95,
                max: 2
            })
        );
    }

    #[test]
    fn call_retry_merges_field_by_field() {
        let c = retry(RawRetry {
            max_attempts: Some(5.0),
            jitter: Some("none".into()),
            ..Default::default()
        })
        .unwrap();
        let k = call(
            &c,
            RawCallOptions {
                timeout_ms: Some(100.0),
                deadline_ms: Some(500.0),
                retry: Toggle::On(RawRetry {
                    base_delay_ms: Some(10.0),
                    ..Default::default()
                }),
                wait_for_online: Some(false),
                hedge: Toggle::Default,
                rate_limit: Some(false),
            },
        )
        .unwrap();
        assert!(!k.wait_for_online);
        assert!(!k.rate_limit);
        assert_eq!((k.timeout_ms, k.deadline_ms), (100.0, 500.0));
        let r = k.retry.unwrap();
        assert_eq!(
            (r.max_attempts, r.jitter, r.base_delay_ms),
            (5, Jitter::None, 10.0)
        );
    }

    #[test]
    fn call_retry_over_client_retry_off_uses_defaults() {
        let c = client(RawClientOptions {
            retry: Toggle::Off,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(call(&c, RawCallOptions::default()).unwrap().retry, None);
        let k = call(
            &c,
            RawCallOptions {
                retry: Toggle::On(RawRetry {
                    max_attempts: Some(2.0),
                    ..Default::default()
                }),
                ..Default::default()
            },
        )
        .unwrap();
        let expected = RetryConfig {
            max_attempts: 2,
            ..RetryConfig::default()
        };
        assert_eq!(k.retry, Some(expected));
    }

    #[test]
    fn call_retry_false_turns_retry_off() {
        let k = call(
            &ClientConfig::default(),
            RawCallOptions {
                retry: Toggle::Off,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(k.retry, None);
    }

    #[test]
    fn call_options_are_validated() {
        let d = ClientConfig::default();
        for bad in [0.0, 1.5, -1.0, MAX_DURATION_MS + 1.0, f64::NAN] {
            let e = call(
                &d,
                RawCallOptions {
                    timeout_ms: Some(bad),
                    ..Default::default()
                },
            )
            .unwrap_err();
            assert_eq!(e.option, "timeoutMs");
            let e = call(
                &d,
                RawCallOptions {
                    deadline_ms: Some(bad),
                    ..Default::default()
                },
            )
            .unwrap_err();
            assert_eq!(e.option, "deadlineMs");
        }
        let e = call(
            &d,
            RawCallOptions {
                retry: Toggle::On(RawRetry {
                    max_attempts: Some(0.0),
                    ..Default::default()
                }),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert_eq!(e.option, "retry.maxAttempts");
    }

    #[test]
    fn breaker_mode_and_k() {
        let c = breaker(RawBreaker {
            mode: Some("adaptive".into()),
            ..RawBreaker::default()
        })
        .unwrap();
        assert_eq!(c.breaker.unwrap().adaptive_k, Some(DEFAULT_ADAPTIVE_K));
        let c = breaker(RawBreaker {
            mode: Some("binary".into()),
            k: Some(3.0),
            ..RawBreaker::default()
        })
        .unwrap();
        assert_eq!(c.breaker.unwrap().adaptive_k, None);
        for (raw, option) in [
            (
                RawBreaker {
                    mode: Some("smart".into()),
                    ..RawBreaker::default()
                },
                "breaker.mode",
            ),
            (
                RawBreaker {
                    mode: Some("adaptive".into()),
                    k: Some(0.5),
                    ..RawBreaker::default()
                },
                "breaker.k",
            ),
            (
                RawBreaker {
                    mode: Some("adaptive".into()),
                    k: Some(f64::NAN),
                    ..RawBreaker::default()
                },
                "breaker.k",
            ),
        ] {
            assert_eq!(breaker(raw).unwrap_err().option, option);
        }
    }
}
