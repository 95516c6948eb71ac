//! Configuration: validated configs with the README's defaults ("Client options") filled in, made
//! from the options as given.
//!
//! # Why validate once, up front
//!
//! A bad number found mid-request would fail a call the user already made
//! (or worse, panic the wasm module); found at `createClient` it is one
//! clear `OptionsError` naming the option. After this module every policy
//! can trust its numbers.
//!
//! # Tables
//!
//! Every option is described once, in a table (`option_table`): its name,
//! the JS type it takes and its rule. A policy's config and its table sit
//! beside the policy (`retry.rs`, `budget.rs`, `breaker.rs`, `limiter.rs`,
//! each with how its config is made of what was given); this module holds
//! the top-level tables ([`CLIENT`], [`CALL`]), `storage` and `hedge`, and
//! composes them, with the rules between options. The web side reads an
//! options object by its table, `option_table::check` applies the rules.
//!
//! # Rules beyond the README's list
//!
//! Each is the reading a user would expect:
//! * `budget.windowMs` and `breaker.windowMs` of 0 (a duration, so valid)
//!   are the shortest window the ring keeps, 1 ms (`window::Ring::new`);
//! * `breaker.maxOpenMs` must be >= `openMs`; when absent it is
//!   `max(2000, openMs)`, so raising `openMs` alone is valid;
//! * `breaker.consecutiveFailures` is a count or `false` (off); absent, it
//!   is the host's default ([`HostDefaults`]: 3 in a page, off on a server);
//! * `storage.maxEntryBytes` is an integer >= 1;
//! * every integer option is at most 2^31-1;
//! * `retry.statuses` and `retry.methods` may be empty lists (retry nothing;
//!   retry only calls with an idempotency key); each method must be an HTTP
//!   token and is kept uppercased;
//! * `gatewayTimeoutMs` is a timeout (> 0) and derives
//!   `timeoutMs = ceil(1.2 * g)`, computed exactly as `ceil(6g / 5)`.
//!
//! # Several invalid options
//!
//! When several options are invalid, one error names the first found: a
//! client's shared groups (`budget`, `breaker`, `concurrency`, `storage`)
//! first, then the top level's numbers, then `retry` and `hedge`, each
//! object's members in its table's order.

pub use super::breaker::{BreakerConfig, BREAKER, DEFAULT_ADAPTIVE_K};
pub use super::budget::{BudgetConfig, BUDGET};
pub use super::limiter::{LimiterConfig, CONCURRENCY};
use super::option_table::{any, check, int, ms, table, unread, Given, Kind, Opt, Rule};
pub use super::option_table::{is_token, OptionsError, MAX_DURATION_MS};
pub use super::retry::{Jitter, RetryConfig, DEFAULT_STATUSES, RETRY};

/// Where a client runs, which picks its default set once, at
/// `createClient` (README, "Server clients"). A page serves one user; where
/// there is no `window` (Node, Bun, Deno, Cloudflare Workers) one client
/// serves many users, so two defaults differ ([`HostDefaults`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Host {
    #[default]
    Page,
    Server,
}

/// The defaults that differ by host: the second default set is this row,
/// every other default is the same everywhere.
#[derive(Debug, Clone, PartialEq)]
pub struct HostDefaults {
    /// A page's 6 slots are the browser's own per-host connection limit;
    /// a server's calls are its users' (30 users behind a 1 s backend
    /// waited 5.2 s with 6 slots), so only a runaway is bounded there.
    pub concurrency: LimiterConfig,
    /// `breaker.consecutiveFailures`. A page's failures in a row are its
    /// one user's view of the backend; a server's may all be one user's
    /// (a `/me` that fails for that user alone), so there the breaker opens
    /// on its failure rate only, which needs `minSamples` from all users.
    pub consecutive_failures: Option<u32>,
}

impl Host {
    /// A page's are the `Default` impls' (README, "Client options").
    pub fn defaults(self) -> HostDefaults {
        match self {
            Host::Page => HostDefaults {
                concurrency: LimiterConfig::default(),
                consecutive_failures: BreakerConfig::default().consecutive_failures,
            },
            Host::Server => HostDefaults {
                concurrency: LimiterConfig {
                    max: 256,
                    queue: 10_000,
                },
                consecutive_failures: None,
            },
        }
    }
}

type Result<T> = std::result::Result<T, OptionsError>;

/// The breaker's defaults on `host`.
fn breaker_on(host: Host) -> BreakerConfig {
    BreakerConfig {
        consecutive_failures: host.defaults().consecutive_failures,
        ..BreakerConfig::default()
    }
}

const fn group(key: &'static str, table: &'static [Opt]) -> Opt {
    any(key, Kind::Group(table))
}

const TIMEOUT: Opt = ms("timeoutMs", 1.0);
const DEADLINE: Opt = ms("deadlineMs", 1.0);
const RETRY_GROUP: Opt = group("retry", &RETRY);
const WAIT_FOR_ONLINE: Opt = any("waitForOnline", Kind::Bool);
const HEDGE_GROUP: Opt = group("hedge", &HEDGE);
const RATE_LIMIT: Opt = any("rateLimit", Kind::Bool);

table! {
    /// A client's options (`createClient`, `extend`), in the order they are read.
    CLIENT, ClientMembers {
        timeout_ms: TIMEOUT,
        gateway_timeout_ms: ms("gatewayTimeoutMs", 1.0),
        deadline_ms: DEADLINE,
        retry: RETRY_GROUP,
        budget: group("budget", &BUDGET),
        breaker: group("breaker", &BREAKER),
        concurrency: group("concurrency", &CONCURRENCY),
        dedupe: any("dedupe", Kind::Bool),
        wait_for_online: WAIT_FOR_ONLINE,
        cross_tab: any("crossTab", Kind::Bool),
        hedge: HEDGE_GROUP,
        rate_limit: RATE_LIMIT,
        storage: group("storage", &STORAGE),
    }
}

table! {
    /// A call's policy options (`request()`, `schema()`, `fetch()`'s init).
    CALL, CallMembers {
        timeout_ms: TIMEOUT,
        deadline_ms: DEADLINE,
        retry: RETRY_GROUP,
        wait_for_online: WAIT_FOR_ONLINE,
        hedge: HEDGE_GROUP,
        rate_limit: RATE_LIMIT,
    }
}

table! {
    /// `storage`'s options.
    STORAGE, StorageMembers {
        prefix: any("prefix", Kind::Text),
        max_entry_bytes: int("maxEntryBytes", 1.0, MAX_DURATION_MS),
    }
}

table! {
    /// `hedge`'s: `afterMs` is required unless a client's hedge gives it.
    HEDGE, HedgeMembers {
        after_ms: Opt {
            key: "afterMs",
            kind: Kind::MsOrP95,
            rule: Rule::Int(0.0, MAX_DURATION_MS),
        },
        max: int("max", 1.0, MAX_HEDGES),
    }
}

const ABSENT: Given = Given::Absent;

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
    /// `hedge`'s members over `base` (the client's, for a call's
    /// override): `afterMs` must come from one of them.
    fn from_members(g: &[Given], base: Option<HedgeConfig>) -> Result<HedgeConfig> {
        let m = HedgeMembers::of(g).ok_or_else(|| unread("hedge"))?;
        check("hedge", &HEDGE, g)?;
        let after = match (m.after_ms, base) {
            (Given::Text(_), _) => HedgeAfter::P95,
            (Given::Num(ms), _) => HedgeAfter::Ms(*ms),
            (_, Some(b)) => b.after,
            _ => {
                return Err(OptionsError::new(
                    "hedge.afterMs",
                    "is required (a number or 'p95')",
                ))
            }
        };
        let max = m.max.num().map_or(base.map_or(1, |b| b.max), |v| v as u32);
        Ok(HedgeConfig { after, max })
    }

    fn resolve(g: &Given, base: Option<HedgeConfig>) -> Result<Option<HedgeConfig>> {
        match g {
            Given::Off => Ok(None),
            Given::Group(h) => HedgeConfig::from_members(h, base).map(Some),
            _ => Ok(base),
        }
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
    fn from_members(g: &[Given], d: Self) -> Result<Self> {
        let m = StorageMembers::of(g).ok_or_else(|| unread("storage"))?;
        check("storage", &STORAGE, g)?;
        Ok(Self {
            prefix: m.prefix.text().map_or(d.prefix, str::to_owned),
            max_entry_bytes: m
                .max_entry_bytes
                .num()
                .map_or(d.max_entry_bytes, |v| v as u32),
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
    /// A client's settings from its options' members ([`CLIENT`]), over
    /// `host`'s defaults. The groups a derived client shares are made
    /// here; the rest is what `extend()` may set too, over the defaults.
    pub fn from_members(g: &[Given], host: Host) -> Result<ClientConfig> {
        let m = ClientMembers::of(g).ok_or_else(|| unread("options"))?;
        let d = Self::default();
        let shared = ClientConfig {
            budget: toggle(
                m.budget,
                BudgetConfig::default(),
                BudgetConfig::from_members,
            )?,
            breaker: toggle(m.breaker, breaker_on(host), BreakerConfig::from_members)?,
            concurrency: toggle(
                m.concurrency,
                host.defaults().concurrency,
                LimiterConfig::from_members,
            )?,
            cross_tab: m.cross_tab.flag().unwrap_or(d.cross_tab),
            storage: toggle(
                m.storage,
                StorageConfig::default(),
                StorageConfig::from_members,
            )?,
            ..d
        };
        shared.over(g, &m)
    }

    /// A derived client's settings (`client.extend(options)`, its members
    /// by [`CLIENT`]): the options over these, as a call's options are
    /// (`retry` merged field by field). What the derived client shares
    /// with its parent (budget, breakers, concurrency, storage, the
    /// cross-tab link) cannot be set.
    pub fn extend_members(&self, g: &[Given]) -> Result<ClientConfig> {
        let m = ClientMembers::of(g).ok_or_else(|| unread("options"))?;
        let shared = [
            ("budget", m.budget),
            ("breaker", m.breaker),
            ("concurrency", m.concurrency),
            ("storage", m.storage),
            ("crossTab", m.cross_tab),
        ];
        if let Some((name, _)) = shared.iter().find(|(_, g)| !matches!(g, Given::Absent)) {
            return Err(OptionsError::new(
                name,
                "cannot be changed in extend(): a derived client shares its parent's",
            ));
        }
        self.over(g, &m)
    }

    /// The members a derived client may set ([`CLIENT`]'s but the shared
    /// groups), over these settings.
    fn over(&self, g: &[Given], m: &ClientMembers<&Given>) -> Result<ClientConfig> {
        check("", &CLIENT, g)?;
        let own = CallMembers {
            timeout_ms: &ABSENT,
            deadline_ms: m.deadline_ms,
            retry: m.retry,
            wait_for_online: m.wait_for_online,
            hedge: m.hedge,
            rate_limit: m.rate_limit,
        };
        let call = CallConfig::over(self, own)?;
        Ok(ClientConfig {
            timeout_ms: timeout_of(m.timeout_ms, m.gateway_timeout_ms, self.timeout_ms)?,
            deadline_ms: call.deadline_ms,
            retry: call.retry,
            dedupe: m.dedupe.flag().unwrap_or(self.dedupe),
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
    /// The call's options' members ([`CALL`]) over the client's settings.
    /// A call's `retry` object is merged field by field over the client's
    /// (over the defaults when the client has `retry: false`); `retry: false`
    /// turns retries off for this call.
    pub fn resolve_members(client: &ClientConfig, g: &[Given]) -> Result<CallConfig> {
        let m = CallMembers::of(g).ok_or_else(|| unread("options"))?;
        check("", &CALL, g)?;
        Self::over(client, m)
    }

    /// The members ([`CALL`]'s, checked) over the client's settings.
    fn over(client: &ClientConfig, m: CallMembers<&Given>) -> Result<CallConfig> {
        Ok(Self {
            timeout_ms: m.timeout_ms.num().unwrap_or(client.timeout_ms),
            deadline_ms: m.deadline_ms.num().unwrap_or(client.deadline_ms),
            retry: match m.retry {
                Given::Off => None,
                Given::Group(r) => Some(client.retry.clone().unwrap_or_default().merged(r)?),
                _ => client.retry.clone(),
            },
            wait_for_online: m.wait_for_online.flag().unwrap_or(client.wait_for_online),
            hedge: HedgeConfig::resolve(m.hedge, client.hedge)?,
            rate_limit: m.rate_limit.flag().unwrap_or(client.rate_limit),
        })
    }
}

/// `timeoutMs`, else one derived from `gatewayTimeoutMs`, else `default`
/// (both checked already).
fn timeout_of(timeout: &Given, gateway: &Given, default: f64) -> Result<f64> {
    match (timeout.num(), gateway.num()) {
        (Some(v), _) => Ok(v),
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

/// A sub-option as given: absent (its defaults `d`), `false` (off), or
/// its members, which `build` makes a config of over `d`.
fn toggle<C>(g: &Given, d: C, build: impl FnOnce(&[Given], C) -> Result<C>) -> Result<Option<C>> {
    match g {
        Given::Off => Ok(None),
        Given::Group(m) => build(m, d).map(Some),
        _ => Ok(Some(d)),
    }
}

#[cfg(test)]
mod tests;
