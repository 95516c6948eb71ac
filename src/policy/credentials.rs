//! Whom a call speaks for: the identity of the credentials it sends.
//!
//! # Why
//!
//! A server that shares one client between its users (a Next.js
//! server component, a route handler) must not let one user's quota or
//! cached document reach another. A 429 with `Retry-After`, or a spent
//! per-token quota, says "this caller, wait"; a document fetched with a
//! session cookie is that session's. So holds are kept per breaker key
//! *and* credentials (`ratelimit::HoldKey`), and `schema()` neither
//! stores nor serves a copy for a call that carries any
//! ([`Credentials::carried`]) unless the caller names the cache key.
//! Breakers, the retry budget and slots stay shared: a failing backend
//! fails for everyone.
//!
//! # The identity
//!
//! The identity is computed from the header values a call sends
//! ([`HEADERS`]: `Authorization`, `Cookie`, `Proxy-Authorization`,
//! `X-API-Key`), whoever set them: the client's defaults, the call's own,
//! a token function. It is a fixed-size digest (53 bits of FNV-1a over the
//! values, each tagged with its header and length), never the secret: it
//! is what is kept in the hold table and told to the other tabs (as a
//! number), and it never appears in an event or an error. (Not a
//! cryptographic hash: one user cannot aim a collision at another without
//! that user's secret, and the same origin is trusted as for LocalStorage.) Proven below and
//! by `tests/e2e/shared-server.test.mjs`.

/// The request headers that carry credentials, lowercase.
pub const HEADERS: [&str; 4] = [
    "authorization",
    "cookie",
    "proxy-authorization",
    "x-api-key",
];

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a over `bytes`, from `h`.
fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h = (h ^ u64::from(*b)).wrapping_mul(FNV_PRIME);
    }
    h
}

/// Digests are below this (53 bits): a JS number holds one exactly.
const WIRE_LIMIT: f64 = 9_007_199_254_740_992.0;

/// The credentials of a call, as a digest; `Credentials::NONE` for a call
/// that sends none of [`HEADERS`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Credentials(Option<u64>);

impl Credentials {
    /// A call without credentials: one scope shared by all such calls.
    pub const NONE: Credentials = Credentials(None);

    /// The identity of the values `get` gives for [`HEADERS`] (by their
    /// lowercase name; `None` when the header is absent).
    pub fn of(mut get: impl FnMut(&str) -> Option<String>) -> Credentials {
        let mut h = FNV_OFFSET;
        let mut any = false;
        for (tag, name) in (0u64..).zip(HEADERS) {
            if let Some(v) = get(name) {
                any = true;
                // The header and the value's length first: no two different
                // sets of values feed the same bytes.
                h = fnv(h, &(tag | (v.len() as u64) << 8).to_le_bytes());
                h = fnv(h, v.as_bytes());
            }
        }
        // The high 53 bits (FNV mixes its high bits best).
        Credentials(any.then_some(h >> 11))
    }

    /// The digest itself, None without credentials: a part of the
    /// identity of a shared GET (never the secret).
    pub fn digest(&self) -> Option<u64> {
        self.0
    }

    /// The call sends credentials.
    pub fn carried(&self) -> bool {
        self.0.is_some()
    }

    /// The digest as a JS number (an integer below 2^53), None without
    /// credentials: what the other tabs are told.
    pub fn wire(&self) -> Option<f64> {
        self.0.map(|d| d as f64)
    }

    /// What [`Credentials::wire`] gave; None for any other number (a
    /// peer's message that is not one this code sends).
    pub fn from_wire(v: f64) -> Option<Credentials> {
        let whole = (0.0..WIRE_LIMIT).contains(&v) && v.trunc() == v;
        // In range and whole: the cast is exact.
        whole.then_some(Credentials(Some(v as u64)))
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn of(pairs: &[(&str, &str)]) -> Credentials {
        Credentials::of(|name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn each_credential_header_makes_an_identity_and_others_do_not() {
        assert_eq!(of(&[]), Credentials::NONE);
        assert!(!of(&[("accept", "text/html"), ("x-token", "s")]).carried());
        for name in HEADERS {
            let alice = of(&[(name, "sid=alice")]);
            assert!(alice.carried(), "{name}");
            assert_ne!(alice, of(&[(name, "sid=mallory")]), "{name}");
            assert_eq!(alice, of(&[(name, "sid=alice")]), "{name}");
        }
        // The same value in another header is another identity.
        assert_ne!(of(&[("cookie", "k")]), of(&[("x-api-key", "k")]));
        // Values cannot be shifted between headers.
        assert_ne!(
            of(&[("authorization", "ab"), ("cookie", "c")]),
            of(&[("authorization", "a"), ("cookie", "bc")])
        );
        // An empty value is still a credential header sent.
        assert!(of(&[("cookie", "")]).carried());
    }

    #[test]
    fn the_wire_form_is_a_whole_number_below_2_pow_53_and_only_that_is_read_back() {
        let secret = "Bearer s3cret-token-".repeat(1000);
        let c = of(&[("authorization", &secret)]);
        let n = c.wire().unwrap();
        assert!((0.0..WIRE_LIMIT).contains(&n) && n.trunc() == n);
        assert_eq!(Credentials::from_wire(n), Some(c));
        assert_eq!(Credentials::NONE.wire(), None);
        for bad in [-1.0, 0.5, WIRE_LIMIT, f64::INFINITY, f64::NAN, 1e300] {
            assert_eq!(Credentials::from_wire(bad), None, "{bad}");
        }
        assert_eq!(
            Credentials::from_wire(0.0).and_then(|c| c.wire()),
            Some(0.0)
        );
    }

    proptest! {
        #[test]
        fn the_wire_form_round_trips(values in prop::collection::vec(proptest::option::of(".{0,40}"), 4)) {
            let c = Credentials::of(|name| {
                let i = HEADERS.iter().position(|h| *h == name)?;
                values.get(i).cloned().flatten()
            });
            prop_assert_eq!(c.carried(), values.iter().any(Option::is_some));
            if let Some(n) = c.wire() {
                prop_assert_eq!(Credentials::from_wire(n), Some(c));
            }
        }
    }
}
