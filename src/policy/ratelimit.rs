//! Rate-limit fields: what a server says about its quota, and the waits that
//! obey it before the server has to refuse.
//!
//! # Why
//!
//! A server that enforces a quota answers 429 once it is spent, and a
//! client that learns this only from the refusal has already sent the call
//! (and, with retries, sends it again). Most such servers announce the quota
//! on every answer, so a client can hold its calls until the reset when
//! nothing remains, and spread them over the rest of the window when little
//! does: the refusals are avoided rather than retried.
//!
//! # Three pieces, each pure
//!
//! * [`read`]: the fields of one response -> the quota that binds
//!   ([`Quota`]). Understood: the IETF Structured Fields of
//!   draft-ietf-httpapi-ratelimit-headers-11 (`RateLimit: "name";r=..;t=..`
//!   with `RateLimit-Policy: "name";q=..;w=..`), the dictionary form of its
//!   earlier drafts (`RateLimit: limit=.., remaining=.., reset=..`), the
//!   older draft's `RateLimit-Limit` / `-Remaining` / `-Reset`, and the
//!   `X-RateLimit-*` and `X-Rate-Limit-*` spellings. Malformed values are
//!   ignored, never an error; at most [`MAX_ITEMS`] items of a field are
//!   read, so a server's 200 KB of items costs no more than 64.
//! * [`refusal_wait_ms`]: the retry delay of a 429/503 without Retry-After,
//!   read as ky reads it (Retry-After > `RateLimit-Reset` >
//!   `X-RateLimit-Retry-After` > `X-RateLimit-Reset` ?? `X-Rate-Limit-Reset`,
//!   the first field present deciding even when malformed), with the IETF
//!   `RateLimit` field's `t` first.
//! * [`Limits`]: a table per key and credentials ([`HoldKey`]) of "no send
//!   before" times (Retry-After cooldowns and spent quotas) and of spacing
//!   for a low remaining quota,
//!   answering "send now", "wait d ms" or "refuse: the wait outlasts the
//!   deadline". At most [`MAX_KEYS`] keys; every hold and interval is bounded
//!   by the caller's cap (`maxRetryAfterMs`).
//!
//! # Resets
//!
//! A reset is delta seconds, or a Unix timestamp in seconds when it is at
//! least 2024-01-01 (ky's rule: earlier epoch values cannot be told from
//! delays), or an HTTP-date. Proven by this module's tests and
//! `tests/e2e/ratelimit.test.mjs` (ky's own cases, ported).

use super::backoff::parse_retry_after;
use super::credentials::Credentials;

/// 2024-01-01T00:00:00Z in epoch ms: a reset of at least this many seconds
/// (times 1000) is a timestamp, not a delay.
pub const TIMESTAMP_THRESHOLD_MS: f64 = 1_704_067_200_000.0;

/// Items of one field read at most (list or dictionary members, empty ones
/// aside): what a server names beyond them is ignored, so a header set of
/// any size is read in time linear in its size, and a `RateLimit` item is
/// matched to its `RateLimit-Policy` item among at most this many.
pub const MAX_ITEMS: usize = 64;

/// Keys tracked at most; expired ones go first, then the one ending soonest.
pub const MAX_KEYS: usize = 256;

/// A remaining quota at or below `quota / LOW_FRACTION` is low (calls are
/// spaced); with no quota known, at or below `LOW_UNKNOWN`.
const LOW_FRACTION: u64 = 10;
const LOW_UNKNOWN: u64 = 10;

/// Structured Fields integers have at most 15 digits; longer legacy values
/// saturate here.
const MAX_INT: u64 = 999_999_999_999_999;

/// The quota one response announces (the most restrictive, when it names
/// several).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quota {
    /// Requests left in the current window.
    pub remaining: u64,
    /// Time until the window resets, when the server says.
    pub reset_ms: Option<f64>,
    /// Requests allowed per window, when the server says.
    pub quota: Option<u64>,
    /// The window's length, when the server says.
    pub window_ms: Option<f64>,
}

/// What a quota asks of the sender.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Advice {
    /// Nothing left: no send for this long.
    Hold(f64),
    /// Little left: at most one send per `interval_ms` for `for_ms`.
    Pace { interval_ms: f64, for_ms: f64 },
    /// Enough left, or nothing known about when it comes back.
    Free,
}

impl Quota {
    pub fn advice(&self) -> Advice {
        // Without a reset, the window's length is the longest the server
        // can mean (a spent quota is back within one window).
        let Some(reset) = self.reset_ms.or(self.window_ms) else {
            return Advice::Free;
        };
        if self.remaining == 0 {
            return Advice::Hold(reset);
        }
        let low = match self.quota {
            Some(q) => self.remaining.saturating_mul(LOW_FRACTION) <= q,
            None => self.remaining <= LOW_UNKNOWN,
        };
        if low && reset > 0.0 {
            Advice::Pace {
                interval_ms: reset / self.remaining as f64,
                for_ms: reset,
            }
        } else {
            Advice::Free
        }
    }

    /// How much this quota holds a sender back, to pick the binding one of
    /// several: any hold beats any spacing, a longer one a shorter one.
    fn weight(&self) -> (u8, f64) {
        match self.advice() {
            Advice::Hold(ms) => (2, ms),
            Advice::Pace { interval_ms, .. } => (1, interval_ms),
            Advice::Free => (0, -(self.remaining as f64)),
        }
    }
}

/// A response's field values by lowercase name.
type Fields<'a> = dyn FnMut(&str) -> Option<String> + 'a;

/// The field names read for each legacy spelling: remaining, reset, limit.
const FAMILIES: [[&str; 3]; 3] = [
    ["ratelimit-remaining", "ratelimit-reset", "ratelimit-limit"],
    [
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
        "x-ratelimit-limit",
    ],
    [
        "x-rate-limit-remaining",
        "x-rate-limit-reset",
        "x-rate-limit-limit",
    ],
];

/// The fields whose absence means a response announces no quota: `read`
/// returns None when none of them is present (the browser asks the host
/// about all four in one call before reading any).
pub fn announced_by() -> impl Iterator<Item = &'static str> {
    std::iter::once("ratelimit").chain(FAMILIES.iter().map(|[remaining, ..]| *remaining))
}

/// The quota a response announces. `get` returns a field's value by its
/// lowercase name (None when absent); it is asked for `ratelimit` and each
/// spelling's `-remaining` first (the names [`announced_by`] gives), and for
/// the others only when those are present.
pub fn read(mut get: impl FnMut(&str) -> Option<String>, now_epoch_ms: f64) -> Option<Quota> {
    if let Some(v) = get("ratelimit") {
        if let Some(q) = structured(&v, Some(&mut get)) {
            return Some(q);
        }
    }
    for [remaining, reset, limit] in FAMILIES {
        let Some(remaining) = get(remaining).and_then(|v| leading_uint(&v)) else {
            continue;
        };
        let limit = get(limit);
        return Some(Quota {
            remaining,
            reset_ms: get(reset).and_then(|v| parse_reset(&v, now_epoch_ms, true)),
            quota: limit.as_deref().and_then(leading_uint),
            window_ms: limit.as_deref().and_then(limit_window_ms),
        });
    }
    None
}

/// The retry delay a 429/503 without Retry-After asks for: the IETF field's
/// reset, else ky's chain (the first of `RateLimit-Reset`,
/// `X-RateLimit-Retry-After`, `X-RateLimit-Reset` / `X-Rate-Limit-Reset`
/// that is present decides, None when it is malformed). Only delays accept
/// a timestamp; `X-RateLimit-Retry-After` is delay seconds or a date.
pub fn refusal_wait_ms(
    mut get: impl FnMut(&str) -> Option<String>,
    now_epoch_ms: f64,
) -> Option<f64> {
    let ietf = get("ratelimit")
        .and_then(|v| structured(&v, None))
        .and_then(|q| q.reset_ms);
    if ietf.is_some() {
        return ietf;
    }
    if let Some(v) = get("ratelimit-reset") {
        return parse_reset(&v, now_epoch_ms, true);
    }
    if let Some(v) = get("x-ratelimit-retry-after") {
        return parse_reset(&v, now_epoch_ms, false);
    }
    get("x-ratelimit-reset")
        .or_else(|| get("x-rate-limit-reset"))
        .and_then(|v| parse_reset(&v, now_epoch_ms, true))
}

/// A reset value -> ms from now (>= 0): delta seconds, a Unix timestamp in
/// seconds (if `timestamps` and at least 2024-01-01), or an HTTP-date.
pub fn parse_reset(value: &str, now_epoch_ms: f64, timestamps: bool) -> Option<f64> {
    let ms = parse_retry_after(value, now_epoch_ms)?;
    let digits = value.bytes().all(|b| b.is_ascii_digit());
    if timestamps && digits && ms >= TIMESTAMP_THRESHOLD_MS {
        let left = ms - now_epoch_ms;
        return left.is_finite().then_some(left.max(0.0));
    }
    Some(ms)
}

/// The `RateLimit` field: IETF items (`"name";r=..;t=..`, the binding one
/// of several, with `q` and `w` from the `RateLimit-Policy` item of the
/// same name, read through `get` only when needed) or the earlier drafts'
/// dictionary (`limit=.., remaining=.., reset=..`). (`dyn`: one copy of
/// this in the wasm, not one per caller.)
fn structured(value: &str, get: Option<&mut Fields>) -> Option<Quota> {
    let mut dict = (None, None, None);
    let mut items: Vec<(&str, Quota)> = Vec::new();
    for member in members(value) {
        let (bare, params) = split_params(member);
        if let Some((k, v)) = bare.split_once('=') {
            let v = leading_uint(v);
            match k.trim_end() {
                "limit" => dict.0 = v,
                "remaining" => dict.1 = v,
                "reset" => dict.2 = v,
                _ => {}
            }
            continue;
        }
        let Some(name) = item_name(bare) else {
            continue;
        };
        let Some(remaining) = param(params, "r").and_then(sf_uint) else {
            continue;
        };
        let reset_ms = param(params, "t").and_then(sf_uint).map(seconds);
        let quota = Quota {
            remaining,
            reset_ms,
            quota: None,
            window_ms: None,
        };
        items.push((name, quota));
    }
    if let (limit, Some(remaining), reset) = dict {
        return Some(Quota {
            remaining,
            reset_ms: reset.map(seconds),
            quota: limit,
            window_ms: None,
        });
    }
    if items.is_empty() {
        return None;
    }
    if let Some(p) = get.and_then(|get| get("ratelimit-policy")) {
        for member in members(&p) {
            let (bare, params) = split_params(member);
            let Some(name) = item_name(bare) else {
                continue;
            };
            let q = param(params, "q").and_then(sf_uint).filter(|q| *q > 0);
            let w = param(params, "w").and_then(sf_uint).map(seconds);
            for (_, item) in items.iter_mut().filter(|(n, _)| {
                examined();
                *n == name
            }) {
                item.quota = q;
                item.window_ms = w;
            }
        }
    }
    let mut best: Option<Quota> = None;
    for (_, q) in items {
        best = match best {
            Some(b) if !heavier(q.weight(), b.weight()) => Some(b),
            _ => Some(q),
        };
    }
    best
}

fn heavier(a: (u8, f64), b: (u8, f64)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 > b.1)
}

fn seconds(s: u64) -> f64 {
    s as f64 * 1000.0
}

/// The members of a Structured Fields list or dictionary: split on commas
/// outside quoted strings, trimmed, empty ones dropped; at most
/// [`MAX_ITEMS`], and nothing after the last one read is looked at.
fn members(value: &str) -> Members<'_> {
    Members {
        rest: Some(value),
        left: MAX_ITEMS,
    }
}

struct Members<'a> {
    /// What follows the last comma cut (None: the value is used up).
    rest: Option<&'a str>,
    /// Members still to give.
    left: usize,
}

impl<'a> Iterator for Members<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        while self.left > 0 {
            let (member, rest) = first_member(self.rest?);
            self.rest = rest;
            let member = member.trim_matches([' ', '\t']);
            if !member.is_empty() {
                self.left -= 1;
                examined();
                return Some(member);
            }
        }
        None
    }
}

/// `a, b, c` -> (`a`, Some(` b, c`)): the cut at the first comma outside
/// a quoted string (None after the last member).
fn first_member(value: &str) -> (&str, Option<&str>) {
    let mut quoted = false;
    let mut escaped = false;
    for (i, b) in value.bytes().enumerate() {
        match b {
            _ if escaped => escaped = false,
            b'\\' if quoted => escaped = true,
            b'"' => quoted = !quoted,
            b',' if !quoted => {
                // `,` is ASCII: both cuts are on char boundaries (checked
                // anyway, so no panic path is linked).
                if let (Some(a), Some(b)) = (value.get(..i), value.get(i + 1..)) {
                    return (a, Some(b));
                }
            }
            _ => {}
        }
    }
    (value, None)
}

/// Counts the items and item pairs looked at, for the test that bounds
/// the work a header set can cause (nothing outside tests).
#[inline(always)]
fn examined() {
    #[cfg(all(test, not(target_arch = "wasm32")))]
    tests::EXAMINED.with(|n| n.set(n.get() + 1));
}

/// `bare;k=v;k2=v2` -> (`bare`, `;k=v;k2=v2`), the cut at the first `;`
/// outside a quoted string.
fn split_params(member: &str) -> (&str, &str) {
    let mut quoted = false;
    let mut escaped = false;
    for (i, b) in member.bytes().enumerate() {
        match b {
            _ if escaped => escaped = false,
            b'\\' if quoted => escaped = true,
            b'"' => quoted = !quoted,
            b';' if !quoted => {
                // `;` is ASCII: the cut is on a char boundary (checked
                // anyway, so no panic path is linked).
                if let Some((bare, rest)) = member.split_at_checked(i) {
                    return (bare.trim_end(), rest);
                }
            }
            _ => {}
        }
    }
    (member, "")
}

/// A parameter's value (`;r=5` -> "5"); names are lowercase in Structured
/// Fields, so matched exactly.
fn param<'a>(params: &'a str, name: &str) -> Option<&'a str> {
    params
        .split(';')
        .map(|p| p.trim_matches([' ', '\t']))
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// An item's name: a quoted string (as written, escapes kept: both fields
/// escape a name alike) or a token.
fn item_name(bare: &str) -> Option<&str> {
    if let Some(inner) = bare.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        let mut escaped = false;
        for b in inner.bytes() {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => return None,
                _ => {}
            }
        }
        return (!escaped).then_some(inner);
    }
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~:/".contains(&b);
    let first_ok = bare
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'*');
    (first_ok && bare.bytes().all(token)).then_some(bare)
}

/// A Structured Fields integer that is a count or seconds: 1 to 15 digits.
fn sf_uint(v: &str) -> Option<u64> {
    if v.is_empty() || v.len() > 15 || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(v.bytes().fold(0, |acc, b| acc * 10 + u64::from(b - b'0')))
}

/// The leading integer of a legacy value (`100`, `100, 100;w=60`): digits
/// only up to the first `,` or `;`, longer ones saturating.
fn leading_uint(v: &str) -> Option<u64> {
    let head = v.split([',', ';']).next()?.trim_matches([' ', '\t']);
    if head.is_empty() || !head.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(head.bytes().fold(0u64, |acc, b| {
        acc.saturating_mul(10)
            .saturating_add(u64::from(b - b'0'))
            .min(MAX_INT)
    }))
}

/// The older draft's `RateLimit-Limit: 100, 100;w=60`: the window of the
/// first policy that names one.
fn limit_window_ms(v: &str) -> Option<f64> {
    members(v)
        .find_map(|m| param(split_params(m).1, "w").and_then(sf_uint))
        .map(seconds)
}

/// After a window's reset, how long the other calls wait for the answer
/// to the one call sent to learn the new quota, at most.
pub const PROBE_MS: f64 = 1000.0;

/// While that answer is awaited, the others look again this often.
pub const PROBE_POLL_MS: f64 = 50.0;

/// An answer whose reset is this much later than the window known is a
/// new window, not a late answer from the current one.
const SAME_WINDOW_SLACK_MS: f64 = 1000.0;

/// Why a key is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// A Retry-After (or a refusal's reset) this client was given.
    RetryAfter,
    /// The quota is spent until its reset (or, just after a reset, the
    /// answer that tells the new one is awaited).
    Quota,
    /// The quota is low: calls are spaced.
    Pace,
    /// Another tab was told to wait.
    Peer,
    /// Held by its origin's burst until the origin's next probe may go,
    /// or released from it and spread over the backoff window (never
    /// announced: see `guard/burst.rs`).
    Burst,
}

impl Why {
    pub fn as_str(self) -> &'static str {
        match self {
            Why::RetryAfter => "retryAfter",
            Why::Quota => "quota",
            Why::Pace => "pace",
            Why::Peer => "crossTab",
            Why::Burst => "burst",
        }
    }
}

/// What [`Limits::admit`] decides for one send.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Admit {
    Now,
    /// Wait this long, then ask again.
    Wait {
        ms: f64,
        why: Why,
    },
    /// The wait would reach the caller's limit: fail now.
    Refuse {
        ms: f64,
        why: Why,
    },
}

/// What this client knows of a key's current quota window.
#[derive(Debug, Clone, PartialEq)]
struct Window {
    /// Sends this client may still make before `reset_at`: the remaining
    /// count last announced, less the sends made since (answers to earlier
    /// sends, arriving late, never raise it within a window).
    allowance: u64,
    reset_at: f64,
    quota: Option<u64>,
    /// Earliest next send while spacing.
    next: f64,
    /// The window has passed: one send goes out to learn the new one.
    probing: bool,
}

impl Window {
    fn low(&self) -> bool {
        !self.probing
            && match self.quota {
                Some(q) => self.allowance.saturating_mul(LOW_FRACTION) <= q,
                None => self.allowance <= LOW_UNKNOWN,
            }
    }
}

/// Whose holds: the calls to a breaker key sent with these credentials.
/// Quotas are per user, so one user's 429 or spent quota must not hold
/// another's calls; a bare key (`"k".into()`) stands for the calls without
/// credentials.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HoldKey<'a> {
    pub key: &'a str,
    pub who: Credentials,
}

impl<'a> From<&'a str> for HoldKey<'a> {
    fn from(key: &'a str) -> Self {
        HoldKey {
            key,
            who: Credentials::NONE,
        }
    }
}

impl<'a> From<&'a String> for HoldKey<'a> {
    fn from(key: &'a String) -> Self {
        HoldKey::from(key.as_str())
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Entry {
    key: String,
    who: Credentials,
    /// Retry-After (this client's or another tab's): every call obeys.
    hold_until: f64,
    why: Why,
    /// The announced quota: only calls that obey rate limits follow it.
    window: Option<Window>,
}

impl Entry {
    fn is(&self, k: HoldKey) -> bool {
        self.who == k.who && self.key == k.key
    }

    fn ends(&self) -> f64 {
        self.window
            .as_ref()
            .map_or(self.hold_until, |w| w.reset_at.max(self.hold_until))
    }
}

/// Per key and credentials: Retry-After holds, and the quota window the
/// server announced.
///
/// Within a window the sends are counted against the remaining quota, so
/// concurrent calls do not all go out on one announcement; none left holds
/// them until the reset, little left spaces them over the rest of the
/// window. After the reset one call goes out first and the others wait for
/// its answer (at most [`PROBE_MS`]), so the calls held back do not all hit
/// the new window at once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Limits {
    entries: Vec<Entry>,
}

impl Limits {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// No send to `key` before `until` (a later hold wins; a non-finite
    /// time is ignored). A `Why::Quota` hold (another tab's spent quota)
    /// binds only calls that obey rate limits; any other binds every call.
    pub fn hold<'k>(&mut self, key: impl Into<HoldKey<'k>>, until: f64, why: Why, now_ms: f64) {
        let key = key.into();
        if !until.is_finite() || until <= now_ms {
            return;
        }
        let Some(e) = self.entry(key, now_ms) else {
            return;
        };
        if why == Why::Quota {
            match e.window.as_mut() {
                Some(w) if w.allowance == 0 && !w.probing => w.reset_at = w.reset_at.max(until),
                _ => {
                    e.window = Some(Window {
                        allowance: 0,
                        reset_at: until,
                        quota: e.window.as_ref().and_then(|w| w.quota),
                        next: now_ms,
                        probing: false,
                    })
                }
            }
        } else if until > e.hold_until {
            e.hold_until = until;
            e.why = why;
        }
    }

    /// Applies what an answer to `key` announced (None: no rate-limit
    /// fields, which ends what was known). Waits are capped at `max_ms`.
    /// Returns the end of the hold when the quota is spent (to tell other
    /// tabs), if this answer set or extended it.
    pub fn observe<'k>(
        &mut self,
        key: impl Into<HoldKey<'k>>,
        q: Option<&Quota>,
        now_ms: f64,
        max_ms: f64,
    ) -> Option<f64> {
        let key = key.into();
        let span = q.and_then(|q| q.reset_ms.or(q.window_ms));
        let (Some(q), Some(span)) = (q, span) else {
            if let Some(e) = self.entries.iter_mut().find(|e| e.is(key)) {
                e.window = None;
            }
            return None;
        };
        let reset_at = now_ms + span.clamp(0.0, max_ms.max(0.0));
        let e = self.entry(key, now_ms)?;
        let before = e.window.as_ref().map(|w| (w.allowance, w.reset_at));
        match e.window.as_mut() {
            Some(w) if !w.probing && reset_at <= w.reset_at + SAME_WINDOW_SLACK_MS => {
                w.allowance = w.allowance.min(q.remaining);
                w.reset_at = w.reset_at.max(reset_at);
                w.quota = q.quota.or(w.quota);
            }
            _ => {
                let next = e.window.as_ref().map_or(now_ms, |w| w.next);
                e.window = Some(Window {
                    allowance: q.remaining,
                    reset_at,
                    quota: q.quota,
                    next,
                    probing: false,
                });
            }
        }
        let w = e.window.as_ref()?;
        let changed = before.is_none_or(|(a, r)| a > 0 || w.reset_at > r);
        (w.allowance == 0 && changed && w.reset_at > now_ms).then_some(w.reset_at)
    }

    /// May a call to `key` be sent at `now_ms`? A wait of `max_wait_ms` or
    /// more is refused (the caller's deadline). A send admitted counts
    /// against the window. A call that does not `obey` rate limits waits
    /// for Retry-After holds only.
    pub fn admit<'k>(
        &mut self,
        key: impl Into<HoldKey<'k>>,
        now_ms: f64,
        max_wait_ms: f64,
        obey: bool,
    ) -> Admit {
        let key = key.into();
        let Some(e) = self.entries.iter_mut().find(|e| e.is(key)) else {
            return Admit::Now;
        };
        let decide = |ms: f64, why: Why| {
            if ms >= max_wait_ms {
                Admit::Refuse { ms, why }
            } else {
                Admit::Wait { ms, why }
            }
        };
        if e.hold_until > now_ms {
            return decide(e.hold_until - now_ms, e.why);
        }
        let Some(w) = e.window.as_mut().filter(|_| obey) else {
            return Admit::Now;
        };
        if now_ms >= w.reset_at {
            // A new window of unknown quota: one send learns it.
            *w = Window {
                allowance: 1,
                reset_at: now_ms + PROBE_MS,
                quota: w.quota,
                next: now_ms,
                probing: true,
            };
        }
        if w.allowance == 0 {
            let ms = w.reset_at - now_ms;
            return match decide(ms, Why::Quota) {
                // The answer may come any moment: look again soon.
                Admit::Wait { .. } if w.probing => Admit::Wait {
                    ms: ms.min(PROBE_POLL_MS),
                    why: Why::Quota,
                },
                other => other,
            };
        }
        if w.low() {
            if w.next > now_ms {
                return decide(w.next - now_ms, Why::Pace);
            }
            w.next = now_ms + (w.reset_at - now_ms) / w.allowance as f64;
        }
        w.allowance -= 1;
        Admit::Now
    }

    /// How long `key` is held from `now_ms` for a call that obeys (0 when
    /// it is not).
    pub fn held_for<'k>(&self, key: impl Into<HoldKey<'k>>, now_ms: f64) -> f64 {
        let key = key.into();
        self.entries.iter().find(|e| e.is(key)).map_or(0.0, |e| {
            let quota = e
                .window
                .as_ref()
                .filter(|w| w.allowance == 0)
                .map_or(f64::NEG_INFINITY, |w| w.reset_at);
            (e.hold_until.max(quota) - now_ms).max(0.0)
        })
    }

    /// The entry of `key`, made room for at the cap (always Some).
    fn entry(&mut self, key: HoldKey, now_ms: f64) -> Option<&mut Entry> {
        if !self.entries.iter().any(|e| e.is(key)) {
            if self.entries.len() >= MAX_KEYS {
                self.entries.retain(|e| e.ends() > now_ms);
            }
            if self.entries.len() >= MAX_KEYS {
                let soonest = self
                    .entries
                    .iter()
                    .enumerate()
                    .min_by(|a, b| a.1.ends().total_cmp(&b.1.ends()))
                    .map(|(i, _)| i);
                if let Some(i) = soonest {
                    self.entries.swap_remove(i);
                }
            }
            self.entries.push(Entry {
                key: key.key.to_owned(),
                who: key.who,
                hold_until: f64::NEG_INFINITY,
                why: Why::RetryAfter,
                window: None,
            });
        }
        self.entries.iter_mut().find(|e| e.is(key))
    }
}

// Native only: proptest is a native dev-dependency, and `wasm-pack test`
// builds every test target for wasm32.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    thread_local! {
        /// Items and item pairs looked at (see `examined`).
        pub(super) static EXAMINED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// 2026-01-01T00:00:00Z, the `now` of ky's timestamp cases.
    const NOW: f64 = 1_767_225_600_000.0;

    /// A response's fields, looked up as the engine does (lowercase names),
    /// counting the lookups.
    fn fields<'a>(
        pairs: &'a [(&'a str, &'a str)],
        asked: &'a std::cell::Cell<u32>,
    ) -> impl FnMut(&str) -> Option<String> + 'a {
        move |name| {
            asked.set(asked.get() + 1);
            pairs
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| (*v).to_owned())
        }
    }

    fn quota(pairs: &[(&str, &str)]) -> Option<Quota> {
        let asked = std::cell::Cell::new(0);
        read(fields(pairs, &asked), NOW)
    }

    fn refusal(pairs: &[(&str, &str)]) -> Option<f64> {
        let asked = std::cell::Cell::new(0);
        refusal_wait_ms(fields(pairs, &asked), NOW)
    }

    fn q(remaining: u64, reset: Option<f64>, quota: Option<u64>, window: Option<f64>) -> Quota {
        Quota {
            remaining,
            reset_ms: reset,
            quota,
            window_ms: window,
        }
    }

    #[test]
    fn each_announcing_field_alone_announces_a_quota() {
        let names: Vec<&str> = announced_by().collect();
        assert_eq!(
            names,
            [
                "ratelimit",
                "ratelimit-remaining",
                "x-ratelimit-remaining",
                "x-rate-limit-remaining"
            ]
        );
        for name in names {
            let value = if name == "ratelimit" { "day;r=7" } else { "7" };
            assert_eq!(
                quota(&[(name, value)]).map(|q| q.remaining),
                Some(7),
                "{name}"
            );
        }
    }

    #[test]
    fn ietf_structured_fields() {
        assert_eq!(
            quota(&[
                ("RateLimit", "\"default\";r=50;t=30"),
                ("RateLimit-Policy", "\"default\";q=100;w=60"),
            ]),
            Some(q(50, Some(30_000.0), Some(100), Some(60_000.0)))
        );
        // A token name, no reset, no policy field.
        assert_eq!(
            quota(&[("RateLimit", "day;r=7")]),
            Some(q(7, None, None, None))
        );
        // Spaces the grammar allows, and parameters it ignores.
        assert_eq!(
            quota(&[("RateLimit", "\"a, b\";pk=:cHJvamVjdDEyMw==:; r=3 ;t=2")]),
            Some(q(3, Some(2000.0), None, None))
        );
    }

    #[test]
    fn ietf_binding_policy_of_several() {
        let policy = (
            "RateLimit-Policy",
            "\"burst\";q=100;w=1, \"day\";q=1000;w=86400",
        );
        // The daily one is spent: it binds, however much the burst has left.
        assert_eq!(
            quota(&[
                ("RateLimit", "\"burst\";r=99;t=1, \"day\";r=0;t=3600"),
                policy
            ]),
            Some(q(0, Some(3_600_000.0), Some(1000), Some(86_400_000.0)))
        );
        // Both low: the wider spacing binds (3 s apart beats 100 ms apart).
        assert_eq!(
            quota(&[
                ("RateLimit", "\"burst\";r=5;t=1, \"day\";r=20;t=60"),
                policy
            ]),
            Some(q(20, Some(60_000.0), Some(1000), Some(86_400_000.0)))
        );
        // Two spent ones: the longer hold.
        assert_eq!(
            quota(&[("RateLimit", "a;r=0;t=5, b;r=0;t=9, c;r=0;t=2")]),
            Some(q(0, Some(9000.0), None, None))
        );
    }

    #[test]
    fn earlier_drafts_dictionary() {
        assert_eq!(
            quota(&[("RateLimit", "limit=100, remaining=0, reset=5")]),
            Some(q(0, Some(5000.0), Some(100), None))
        );
    }

    #[test]
    fn legacy_spellings() {
        for [rem, reset, limit] in FAMILIES {
            assert_eq!(
                quota(&[(rem, "4"), (reset, "12"), (limit, "60")]),
                Some(q(4, Some(12_000.0), Some(60), None)),
                "{rem}"
            );
        }
        // The older draft's quota policies in the limit field.
        assert_eq!(
            quota(&[
                ("RateLimit-Limit", "10, 10;w=1, 1000;w=3600"),
                ("RateLimit-Remaining", "9"),
            ]),
            Some(q(9, None, Some(10), Some(1000.0)))
        );
        // GitHub: a Unix timestamp.
        assert_eq!(
            quota(&[
                ("X-RateLimit-Remaining", "0"),
                ("X-RateLimit-Reset", "1767225642")
            ]),
            Some(q(0, Some(42_000.0), None, None))
        );
    }

    /// Issue 27 item 6: items were matched pairwise, so 215 KB of
    /// `RateLimit` and `RateLimit-Policy` items blocked the page about 1 s
    /// per response. Now at most 64 items of each are read, and the work
    /// (items and pairs looked at) is the same for 200 KB as for 64 items.
    #[test]
    fn huge_rate_limit_fields_cost_at_most_64_items() {
        let n = 8000;
        let mut rl = String::new();
        let mut policy = String::new();
        for i in 0..n {
            // Item 0 is the binding one of the first 64; a later one
            // (never read) would bind harder.
            let (r, t) = if i == 0 {
                (1, 7)
            } else if i == n - 1 {
                (0, 99)
            } else {
                (50, 1)
            };
            rl.push_str(&format!("\"p{i}\";r={r};t={t}, "));
            policy.push_str(&format!("\"p{i}\";q=100;w=60, "));
        }
        assert!(rl.len() + policy.len() > 200_000);
        let pairs = [
            ("ratelimit", rl.as_str()),
            ("ratelimit-policy", policy.as_str()),
        ];
        let asked = std::cell::Cell::new(0);
        EXAMINED.with(|e| e.set(0));
        let got = read(fields(&pairs, &asked), NOW);
        let work = EXAMINED.with(|e| e.get());
        assert!(
            work <= 2 * MAX_ITEMS + MAX_ITEMS * MAX_ITEMS,
            "{work} items and pairs looked at for {n} items"
        );
        assert_eq!(got, Some(q(1, Some(7000.0), Some(100), Some(60_000.0))));
        EXAMINED.with(|e| e.set(0));
        assert_eq!(refusal_wait_ms(fields(&pairs, &asked), NOW), Some(7000.0));
        assert!(EXAMINED.with(|e| e.get()) <= MAX_ITEMS);
        // Empty members and the legacy limit field's policies alike.
        let commas = ",".repeat(200_000);
        EXAMINED.with(|e| e.set(0));
        assert_eq!(quota(&[("RateLimit", &commas)]), None);
        assert_eq!(EXAMINED.with(|e| e.get()), 0);
        let limits = "10;w=1, ".repeat(20_000);
        EXAMINED.with(|e| e.set(0));
        assert_eq!(limit_window_ms(&limits), Some(1000.0));
        assert!(EXAMINED.with(|e| e.get()) <= MAX_ITEMS);
    }

    #[test]
    fn reads_few_fields_when_there_are_none() {
        let asked = std::cell::Cell::new(0);
        assert_eq!(read(fields(&[("content-type", "x")], &asked), NOW), None);
        assert_eq!(asked.get(), 4);
    }

    #[test]
    fn malformed_values_are_ignored() {
        for (name, v) in [
            ("RateLimit", ""),
            ("RateLimit", "\"default\";r=-1;t=5"),
            ("RateLimit", "\"default\";r=1.5"),
            ("RateLimit", "\"default\";t=5"),
            ("RateLimit", "\"unterminated;r=1"),
            ("RateLimit", "1abc;r=1"),
            ("RateLimit", "\"a\";r=1234567890123456"),
            ("RateLimit", ",,,;;;==="),
            ("RateLimit-Remaining", "-3"),
            ("RateLimit-Remaining", "lots"),
            ("X-RateLimit-Remaining", ""),
            ("X-Rate-Limit-Remaining", "1e3"),
        ] {
            assert_eq!(quota(&[(name, v)]), None, "{name}: {v:?}");
        }
        // A malformed reset or limit leaves the rest.
        assert_eq!(
            quota(&[
                ("RateLimit-Remaining", "2"),
                ("RateLimit-Reset", "soon"),
                ("RateLimit-Limit", "x")
            ]),
            Some(q(2, None, None, None))
        );
        // A malformed IETF field falls through to a legacy one.
        assert_eq!(
            quota(&[("RateLimit", "garbage"), ("X-RateLimit-Remaining", "1")]),
            Some(q(1, None, None, None))
        );
        // Saturates instead of overflowing.
        assert_eq!(
            quota(&[("X-RateLimit-Remaining", &"9".repeat(40))]).map(|q| q.remaining),
            Some(MAX_INT)
        );
    }

    #[test]
    fn reset_delay_or_timestamp_as_ky_decides() {
        assert_eq!(parse_reset("1", NOW, true), Some(1000.0));
        assert_eq!(parse_reset("0", NOW, true), Some(0.0));
        // At the threshold a number is a timestamp; below it a delay.
        assert_eq!(parse_reset("1704067200", NOW, true), Some(0.0));
        assert_eq!(
            parse_reset("1704067199", NOW, true),
            Some(1_704_067_199_000.0)
        );
        assert_eq!(parse_reset("1767225603", NOW, true), Some(3000.0));
        // Delay seconds only: never a timestamp.
        assert_eq!(
            parse_reset("1767225603", NOW, false),
            Some(1_767_225_603_000.0)
        );
        assert_eq!(
            parse_reset("Thu, 01 Jan 2026 00:00:07 GMT", NOW, true),
            Some(7000.0)
        );
        for v in ["", "1.5", "-1", "0x10", "1e3", "soon"] {
            assert_eq!(parse_reset(v, NOW, true), None, "{v:?}");
        }
        assert_eq!(parse_reset("1767225603", f64::NAN, true), None);
    }

    #[test]
    fn refusal_wait_follows_kys_chain() {
        assert_eq!(refusal(&[("RateLimit-Reset", "1")]), Some(1000.0));
        assert_eq!(refusal(&[("RateLimit-Reset", "1767225603")]), Some(3000.0));
        assert_eq!(
            refusal(&[("X-RateLimit-Reset", "1767225602")]),
            Some(2000.0)
        );
        assert_eq!(
            refusal(&[("X-Rate-Limit-Reset", "1767225602")]),
            Some(2000.0)
        );
        assert_eq!(
            refusal(&[("X-RateLimit-Retry-After", "1767225602")]),
            Some(1_767_225_602_000.0)
        );
        // The first present decides, even malformed.
        assert_eq!(
            refusal(&[("RateLimit-Reset", ""), ("X-RateLimit-Reset", "5")]),
            None
        );
        assert_eq!(
            refusal(&[("X-RateLimit-Reset", "x"), ("X-Rate-Limit-Reset", "5")]),
            None
        );
        assert_eq!(
            refusal(&[("X-RateLimit-Reset", "4"), ("X-Rate-Limit-Reset", "5")]),
            Some(4000.0)
        );
        // The IETF field first; without a reset it gives way.
        assert_eq!(
            refusal(&[("RateLimit", "d;r=0;t=9"), ("RateLimit-Reset", "1")]),
            Some(9000.0)
        );
        assert_eq!(
            refusal(&[("RateLimit", "d;r=0"), ("RateLimit-Reset", "1")]),
            Some(1000.0)
        );
        assert_eq!(refusal(&[("Content-Type", "x")]), None);
    }

    #[test]
    fn advice() {
        assert_eq!(
            q(0, Some(5000.0), None, None).advice(),
            Advice::Hold(5000.0)
        );
        // No reset: the window is the longest the server can mean.
        assert_eq!(
            q(0, None, Some(10), Some(1000.0)).advice(),
            Advice::Hold(1000.0)
        );
        assert_eq!(q(0, None, None, None).advice(), Advice::Free);
        // Low: a tenth of the quota or less; unknown quota: 10 or less.
        assert_eq!(
            q(10, Some(2000.0), Some(100), None).advice(),
            Advice::Pace {
                interval_ms: 200.0,
                for_ms: 2000.0
            }
        );
        assert_eq!(q(11, Some(2000.0), Some(100), None).advice(), Advice::Free);
        assert_eq!(
            q(4, Some(2000.0), None, None).advice(),
            Advice::Pace {
                interval_ms: 500.0,
                for_ms: 2000.0
            }
        );
        assert_eq!(q(11, Some(2000.0), None, None).advice(), Advice::Free);
        assert_eq!(q(1, Some(0.0), None, None).advice(), Advice::Free);
    }

    const CAP: f64 = 30_000.0;
    const DEADLINE: f64 = 10_000.0;

    fn wait(ms: f64, why: Why) -> Admit {
        Admit::Wait { ms, why }
    }

    #[test]
    fn spent_quota_holds_the_key_until_reset() {
        let mut t = Limits::new();
        let until = t.observe("k", Some(&q(0, Some(1000.0), None, None)), 0.0, CAP);
        assert_eq!(until, Some(1000.0));
        assert_eq!(t.admit("k", 400.0, DEADLINE, true), wait(600.0, Why::Quota));
        // Beyond the caller's deadline: refused at once.
        assert_eq!(
            t.admit("k", 400.0, 600.0, true),
            Admit::Refuse {
                ms: 600.0,
                why: Why::Quota
            }
        );
        assert_eq!(t.admit("other", 400.0, DEADLINE, true), Admit::Now);
        // The same answer again changes nothing to tell.
        assert_eq!(
            t.observe("k", Some(&q(0, Some(600.0), None, None)), 400.0, CAP),
            None
        );
    }

    #[test]
    fn after_the_reset_one_call_learns_the_new_window_first() {
        let mut t = Limits::new();
        t.observe("k", Some(&q(0, Some(1000.0), Some(5), None)), 0.0, CAP);
        // The window has passed: the first call goes, the others wait for
        // its answer, looking again every PROBE_POLL_MS.
        assert_eq!(t.admit("k", 1000.0, DEADLINE, true), Admit::Now);
        assert_eq!(
            t.admit("k", 1000.0, DEADLINE, true),
            wait(PROBE_POLL_MS, Why::Quota)
        );
        // Its answer: 4 of 5 left in a fresh window of 2 s.
        t.observe("k", Some(&q(4, Some(2000.0), Some(5), None)), 1010.0, CAP);
        for _ in 0..4 {
            assert_eq!(t.admit("k", 1010.0, DEADLINE, true), Admit::Now);
        }
        // Those four used it up before any answer said so.
        assert_eq!(
            t.admit("k", 1010.0, DEADLINE, true),
            wait(2000.0, Why::Quota)
        );
        // Late answers to them never raise the count within the window.
        t.observe("k", Some(&q(3, Some(2000.0), Some(5), None)), 1020.0, CAP);
        assert!(matches!(
            t.admit("k", 1020.0, DEADLINE, true),
            Admit::Wait { .. }
        ));
        // With no answer at all, the next probe goes after PROBE_MS.
        let mut t = Limits::new();
        t.observe("k", Some(&q(0, Some(100.0), None, None)), 0.0, CAP);
        assert_eq!(t.admit("k", 100.0, DEADLINE, true), Admit::Now);
        assert!(matches!(
            t.admit("k", 1099.0, DEADLINE, true),
            Admit::Wait { .. }
        ));
        assert_eq!(t.admit("k", 1100.0, DEADLINE, true), Admit::Now);
    }

    #[test]
    fn an_answer_without_fields_ends_what_was_known() {
        let mut t = Limits::new();
        t.observe("k", Some(&q(0, Some(5000.0), None, None)), 0.0, CAP);
        t.observe("k", None, 10.0, CAP);
        assert_eq!(t.admit("k", 10.0, DEADLINE, true), Admit::Now);
        // No reset and no window: nothing to go by either.
        t.observe("k", Some(&q(0, Some(5000.0), None, None)), 0.0, CAP);
        t.observe("k", Some(&q(0, None, None, None)), 10.0, CAP);
        assert_eq!(t.admit("k", 10.0, DEADLINE, true), Admit::Now);
        // A new window the server moved to, later than the one known.
        t.observe("k", Some(&q(0, Some(1000.0), None, None)), 0.0, CAP);
        t.observe("k", Some(&q(50, Some(9000.0), None, None)), 10.0, CAP);
        assert_eq!(t.admit("k", 10.0, DEADLINE, true), Admit::Now);
    }

    #[test]
    fn retry_after_holds_bind_every_call_quota_only_those_that_obey() {
        let mut t = Limits::new();
        t.observe("k", Some(&q(0, Some(5000.0), None, None)), 0.0, CAP);
        assert_eq!(t.admit("k", 0.0, DEADLINE, false), Admit::Now);
        t.hold("k", 1000.0, Why::RetryAfter, 0.0);
        assert_eq!(
            t.admit("k", 0.0, DEADLINE, false),
            wait(1000.0, Why::RetryAfter)
        );
        assert_eq!(
            t.admit("k", 1000.0, DEADLINE, true),
            wait(4000.0, Why::Quota)
        );
        t.hold("k", 9000.0, Why::Peer, 0.0);
        assert_eq!(t.admit("k", 0.0, DEADLINE, true), wait(9000.0, Why::Peer));
        // A peer's spent quota is a quota hold.
        let mut t = Limits::new();
        t.hold("k", 3000.0, Why::Quota, 0.0);
        assert_eq!(t.admit("k", 0.0, DEADLINE, true), wait(3000.0, Why::Quota));
        assert_eq!(t.admit("k", 0.0, DEADLINE, false), Admit::Now);
        t.hold("k", 5000.0, Why::Quota, 0.0);
        assert_eq!(t.held_for("k", 0.0), 5000.0);
    }

    #[test]
    fn holds_are_capped() {
        let mut t = Limits::new();
        let hour = q(0, Some(3_600_000.0), None, None);
        assert_eq!(t.observe("k", Some(&hour), 0.0, CAP), Some(CAP));
        t.hold("k", f64::INFINITY, Why::Peer, 0.0);
        t.hold("k", f64::NAN, Why::Peer, 0.0);
        assert_eq!(t.held_for("k", 0.0), CAP);
    }

    #[test]
    fn low_quota_spaces_sends_over_the_rest_of_the_window() {
        let mut t = Limits::new();
        // 4 left (quota unknown: low), reset in 2 s: one send per 500 ms.
        t.observe("k", Some(&q(4, Some(2000.0), None, None)), 0.0, CAP);
        assert_eq!(t.admit("k", 0.0, DEADLINE, true), Admit::Now);
        assert_eq!(t.admit("k", 100.0, DEADLINE, true), wait(400.0, Why::Pace));
        assert_eq!(
            t.admit("k", 100.0, DEADLINE, true),
            wait(400.0, Why::Pace),
            "a wait takes no slot"
        );
        // 3 left over the remaining 1.5 s.
        assert_eq!(t.admit("k", 500.0, DEADLINE, true), Admit::Now);
        assert_eq!(t.admit("k", 500.0, DEADLINE, true), wait(500.0, Why::Pace));
        assert_eq!(
            t.admit("k", 500.0, 500.0, true),
            Admit::Refuse {
                ms: 500.0,
                why: Why::Pace
            }
        );
        // A plentiful quota is not spaced until it is low.
        let mut t = Limits::new();
        t.observe("k", Some(&q(11, Some(2000.0), None, None)), 0.0, CAP);
        t.observe("j", Some(&q(50, Some(2000.0), Some(100), None)), 0.0, CAP);
        // 11 left of an unknown quota: one send, then 10 are low.
        assert_eq!(t.admit("k", 0.0, DEADLINE, true), Admit::Now);
        assert_eq!(t.admit("k", 0.0, DEADLINE, true), Admit::Now);
        assert_eq!(t.admit("k", 0.0, DEADLINE, true), wait(200.0, Why::Pace));
        for _ in 0..40 {
            assert_eq!(t.admit("j", 0.0, DEADLINE, true), Admit::Now);
        }
        // 10 of 100 left: spaced from here.
        assert_eq!(t.admit("j", 0.0, DEADLINE, true), Admit::Now);
        assert_eq!(t.admit("j", 0.0, DEADLINE, true), wait(200.0, Why::Pace));
        // Calls that ignore rate limits are not spaced.
        assert_eq!(t.admit("j", 0.0, DEADLINE, false), Admit::Now);
    }

    #[test]
    fn table_is_bounded() {
        let mut t = Limits::new();
        for i in 0..1000 {
            let key = format!("k{i}");
            t.hold(&key, 10_000.0 + f64::from(i), Why::RetryAfter, 0.0);
            assert!(t.len() <= MAX_KEYS);
        }
        // A new key always gets in: the hold ending soonest went.
        assert!(t.held_for("k999", 0.0) > 0.0);
        assert_eq!(t.held_for("k0", 0.0), 0.0);
        // Expired entries go first.
        t.hold("late", 20_000.0, Why::Quota, 15_000.0);
        assert_eq!(t.len(), 1);
        assert!(!t.is_empty());
    }

    #[test]
    fn holds_and_quotas_are_per_key_and_credentials_in_one_bounded_table() {
        let user = |n: u32| {
            let v = n.to_string();
            Credentials::of(|name| (name == "cookie").then(|| v.clone()))
        };
        let of = |who| HoldKey { key: "k", who };
        let mut t = Limits::new();
        t.hold(of(user(1)), 5000.0, Why::RetryAfter, 0.0);
        t.observe(of(user(2)), Some(&q(0, Some(5000.0), None, None)), 0.0, CAP);
        assert_eq!(
            t.admit(of(user(1)), 0.0, 1e9, true),
            wait(5000.0, Why::RetryAfter)
        );
        assert_eq!(
            t.admit(of(user(2)), 0.0, 1e9, true),
            wait(5000.0, Why::Quota)
        );
        assert_eq!(t.admit(of(user(3)), 0.0, 1e9, true), Admit::Now);
        assert_eq!(t.admit("k", 0.0, 1e9, true), Admit::Now);
        // Many users share the table's bound.
        for n in 0..1000 {
            t.hold(of(user(n)), 10_000.0, Why::RetryAfter, 0.0);
            assert!(t.len() <= MAX_KEYS);
        }
    }
    proptest! {
        #[test]
        fn read_never_panics(
            a in ".{0,60}",
            b in "[0-9a-z;=\", ]{0,40}",
            c in "[0-9]{0,25}",
            now in any::<f64>(),
        ) {
            let pairs = [
                ("ratelimit", a.as_str()),
                ("ratelimit-policy", b.as_str()),
                ("x-ratelimit-remaining", c.as_str()),
                ("x-ratelimit-reset", c.as_str()),
            ];
            let asked = std::cell::Cell::new(0);
            if let Some(q) = read(fields(&pairs, &asked), now) {
                if let Some(ms) = q.reset_ms {
                    prop_assert!(ms.is_finite() && ms >= 0.0);
                }
            }
            if let Some(ms) = refusal_wait_ms(fields(&pairs, &asked), now) {
                prop_assert!(ms.is_finite() && ms >= 0.0);
            }
        }

        /// The browser skips `read` when none of [`announced_by`] is present:
        /// whatever else a response carries, `read` would say None then.
        #[test]
        fn no_announcing_field_no_quota(
            present in prop::collection::vec((0..12usize, "[0-9a-z;=\", ]{0,30}"), 0..10),
            now in 0.0..1e13f64,
        ) {
            const NAMES: [&str; 12] = [
                "ratelimit", "ratelimit-policy", "ratelimit-remaining", "ratelimit-reset",
                "ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "x-ratelimit-limit",
                "x-rate-limit-remaining", "x-rate-limit-reset", "x-rate-limit-limit", "retry-after",
            ];
            let pairs: Vec<(&str, &str)> = present
                .iter()
                .filter_map(|(i, v)| NAMES.get(*i).map(|n| (*n, v.as_str())))
                .filter(|(n, _)| !announced_by().any(|a| a == *n))
                .collect();
            let asked = std::cell::Cell::new(0);
            prop_assert!(read(fields(&pairs, &asked), now).is_none());
        }

        #[test]
        fn waits_stay_within_the_cap(
            ops in prop::collection::vec((0u64..20, 0.0..100_000.0f64, 0u8..3, 0.0..50_000.0f64), 1..60),
        ) {
            let mut t = Limits::new();
            let mut now = 0.0;
            for (r, reset, kind, step) in ops {
                now += step;
                match kind {
                    0 => { t.observe("k", Some(&q(r, Some(reset), Some(100), None)), now, 30_000.0); }
                    1 => { t.hold("k", now + reset.min(30_000.0), Why::RetryAfter, now); }
                    _ => {
                        match t.admit("k", now, f64::INFINITY, true) {
                            Admit::Wait { ms, .. } => prop_assert!(ms > 0.0 && ms <= 30_000.0),
                            Admit::Refuse { .. } => prop_assert!(false, "no deadline"),
                            Admit::Now => {}
                        }
                    }
                }
            }
        }
    }
}
