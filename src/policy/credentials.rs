//! Whom a call speaks for: the identity of the credentials it sends.
//!
//! Why: a server that shares one client between its users (a Next.js
//! server component, a route handler) must not let one user's quota or
//! cached document reach another. A 429 with `Retry-After`, or a spent
//! per-token quota, says "this caller, wait"; a document fetched with a
//! session cookie is that session's. So holds are kept per breaker key
//! *and* credentials ([`Credentials::scope`]), and `schema()` neither
//! stores nor serves a copy for a call that carries any
//! ([`Credentials::carried`]) unless the caller names the cache key.
//! Breakers, the retry budget and slots stay shared: a failing backend
//! fails for everyone.
//!
//! The identity is computed from the header values a call sends
//! ([`HEADERS`]: `Authorization`, `Cookie`, `Proxy-Authorization`,
//! `X-API-Key`), whoever set them: the client's defaults, the call's own,
//! a token function. It is a fixed-size digest (128-bit FNV-1a over the
//! values, each tagged with its header and length), never the secret: it
//! is what is kept in the hold table and told to the other tabs (as 32 hex
//! digits), and it never appears in an event or an error. Proven below and
//! by `tests/e2e/shared-server.test.mjs`.

use std::borrow::Cow;

/// The request headers that carry credentials, lowercase.
pub const HEADERS: [&str; 4] = [
    "authorization",
    "cookie",
    "proxy-authorization",
    "x-api-key",
];

const FNV_OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
const FNV_PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;

/// The digits of [`Credentials::hex`].
pub const HEX_LEN: usize = 32;

/// The credentials of a call, as a digest; `Credentials::NONE` for a call
/// that sends none of [`HEADERS`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Credentials(Option<u128>);

impl Credentials {
    /// A call without credentials: one scope shared by all such calls.
    pub const NONE: Credentials = Credentials(None);

    /// The identity of the values `get` gives for [`HEADERS`] (by their
    /// lowercase name; `None` when the header is absent).
    pub fn of(mut get: impl FnMut(&str) -> Option<String>) -> Credentials {
        let mut h = FNV_OFFSET;
        let mut any = false;
        let mut feed = |bytes: &[u8]| {
            for b in bytes {
                h = (h ^ u128::from(*b)).wrapping_mul(FNV_PRIME);
            }
        };
        for (tag, name) in (1u8..).zip(HEADERS) {
            if let Some(v) = get(name) {
                any = true;
                // The header and the value's length: no two different sets
                // of values feed the same bytes.
                feed(&[tag]);
                feed(&(v.len() as u64).to_le_bytes());
                feed(v.as_bytes());
            }
        }
        Credentials(any.then_some(h))
    }

    /// The call sends credentials.
    pub fn carried(&self) -> bool {
        self.0.is_some()
    }

    /// The digest as [`HEX_LEN`] lowercase hex digits (None without
    /// credentials): what the other tabs are told.
    pub fn hex(&self) -> Option<String> {
        let d = self.0?;
        let digits = (0..HEX_LEN).rev().map(|i| {
            let nibble = ((d >> (i * 4)) & 0xf) as u8;
            char::from(if nibble < 10 {
                b'0' + nibble
            } else {
                b'a' + nibble - 10
            })
        });
        Some(digits.collect())
    }

    /// What [`Credentials::hex`] wrote; None for anything else (a peer's
    /// message that is not one this code sends).
    pub fn from_hex(s: &str) -> Option<Credentials> {
        if s.len() != HEX_LEN || !s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return None;
        }
        u128::from_str_radix(s, 16)
            .ok()
            .map(|d| Credentials(Some(d)))
    }

    /// The key of the holds of calls to breaker `key` with these
    /// credentials: the breaker key itself without any, else the key and
    /// the digest (a fixed 33 characters more).
    pub fn scope<'a>(&self, key: &'a str) -> Cow<'a, str> {
        match self.hex() {
            None => Cow::Borrowed(key),
            Some(hex) => {
                let mut k = String::with_capacity(key.len() + 1 + HEX_LEN);
                k.push_str(key);
                k.push('\0');
                k.push_str(&hex);
                Cow::Owned(k)
            }
        }
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
    fn the_digest_is_fixed_size_and_never_the_secret() {
        let secret = "Bearer s3cret-token-".repeat(1000);
        let c = of(&[("authorization", &secret)]);
        let hex = c.hex().unwrap();
        assert_eq!(hex.len(), HEX_LEN);
        assert!(!hex.contains("s3cret"));
        assert_eq!(Credentials::from_hex(&hex), Some(c));
        let scoped = c.scope("GET https://api.example/me");
        assert_eq!(
            scoped.len(),
            "GET https://api.example/me".len() + 1 + HEX_LEN
        );
        assert!(!scoped.contains("s3cret"));
        // Without credentials the scope is the breaker key itself.
        assert!(matches!(Credentials::NONE.scope("k"), Cow::Borrowed("k")));
        assert_eq!(Credentials::NONE.hex(), None);
    }

    #[test]
    fn only_what_hex_writes_is_read_back() {
        for bad in [
            "",
            "0",
            "0123456789abcdef0123456789abcdeF",
            "0123456789abcdef0123456789abcdef0",
            "+123456789abcdef0123456789abcdef",
            "0123456789abcdef 123456789abcdef",
        ] {
            assert_eq!(Credentials::from_hex(bad), None, "{bad:?}");
        }
        let zero = "0".repeat(HEX_LEN);
        assert_eq!(
            Credentials::from_hex(&zero).and_then(|c| c.hex()),
            Some(zero)
        );
    }

    proptest! {
        #[test]
        fn hex_round_trips(values in prop::collection::vec(proptest::option::of(".{0,40}"), 4)) {
            let c = Credentials::of(|name| {
                let i = HEADERS.iter().position(|h| *h == name)?;
                values.get(i).cloned().flatten()
            });
            prop_assert_eq!(c.carried(), values.iter().any(Option::is_some));
            if let Some(hex) = c.hex() {
                prop_assert_eq!(Credentials::from_hex(&hex), Some(c));
            }
        }
    }
}
