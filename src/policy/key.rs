//! Keys the app passes (a URL's path in the default breaker key,
//! `breakerKey`, `cacheKey`), bounded: one longer than [`MAX_KEY_UNITS`]
//! UTF-16 units is kept as a readable prefix and its SHA-256.
//!
//! Why: a key outlives its call (a breaker, a hold, a latency window, a
//! cached copy), so a megabyte key held whole costs a megabyte for as long
//! as the client lives: 300 distinct 1 MB keys added 302 MB of wasm memory,
//! and at 1000 x 4 MB the module ran out of memory (issue 27 item 8). The
//! digest has a fixed size, is the same for the same key in every tab (so
//! cross-tab messages still name one breaker), and is SHA-256 so that no one
//! who controls a URL's path can make it collide with another endpoint's
//! key. (Written here: no dependency for 60 lines.) Shorter keys are kept as
//! they are.
//!
//! Tested below and in `tests/e2e/hostile-input.test.mjs`.

use crate::text::cat;

/// The longest key kept whole, in UTF-16 units (as JavaScript counts a
/// string's length; what another tab's message may carry).
pub const MAX_KEY_UNITS: usize = 2048;

/// Characters of a long key kept in front of its digest.
const PREFIX_CHARS: usize = 64;

/// `key` as it is kept: itself when at most [`MAX_KEY_UNITS`] long, else
/// its first `PREFIX_CHARS` characters, `…sha256:` and the hex SHA-256 of
/// the whole key (UTF-8).
pub fn bounded(key: String) -> String {
    // More than MAX units takes more than MAX bytes: most keys stop here.
    if key.len() <= MAX_KEY_UNITS {
        return key;
    }
    // UTF-16 units and the prefix's end, from the UTF-8 bytes: a byte that
    // is no continuation (10xxxxxx) starts a character, a 4-byte one (from
    // 0xF0) takes two units.
    let (mut units, mut chars, mut cut) = (0, 0, key.len());
    for (i, b) in key.bytes().enumerate() {
        if b & 0xc0 != 0x80 {
            if chars == PREFIX_CHARS {
                cut = i;
            }
            chars += 1;
            units += if b >= 0xf0 { 2 } else { 1 };
        }
    }
    if units <= MAX_KEY_UNITS {
        return key;
    }
    let hex = sha256_hex(key.as_bytes());
    let hex = std::str::from_utf8(&hex).unwrap_or("");
    cat(&[key.get(..cut).unwrap_or(""), "…sha256:", hex])
}

const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// The SHA-256 (FIPS 180-4) of `data`, in lowercase hex. Written for
/// size, not speed (a megabyte takes milliseconds): the padded message is
/// read a byte at a time, and every loop has a runtime bound.
#[inline(never)]
fn sha256_hex(data: &[u8]) -> [u8; 64] {
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    // The message, 0x80, zeros, and its length in bits in the last 8
    // bytes of the last block.
    let total = (data.len() + 8) / 64 * 64 + 64;
    let mut start = 0;
    while start < total {
        compress(&mut h, data, start, total);
        start += 64;
    }
    let mut hex = [0u8; 64];
    for (i, digit) in hex.iter_mut().enumerate() {
        let word = h.get(i / 8).copied().unwrap_or(0);
        let nibble = (word >> (28 - 4 * (i % 8))) as u8 & 0xf;
        *digit = if nibble < 10 {
            b'0' + nibble
        } else {
            b'a' - 10 + nibble
        };
    }
    hex
}

/// Byte `i` of `data` padded to `total` bytes (out of line: small code).
#[inline(never)]
fn padded(data: &[u8], total: usize, i: usize) -> u8 {
    match data.get(i) {
        Some(b) => *b,
        None if i == data.len() => 0x80,
        None => {
            let from_end = total.wrapping_sub(i + 1);
            let bits = (data.len() as u64).wrapping_mul(8);
            if from_end < 8 {
                (bits >> (8 * from_end)) as u8
            } else {
                0
            }
        }
    }
}

/// The block of the padded message at `start` into the state `h`: the
/// message schedule kept as a ring of 16 words, the rounds in one loop.
#[inline(never)]
fn compress(h: &mut [u32; 8], data: &[u8], start: usize, total: usize) {
    let mut w = [0u32; 16];
    let mut s = *h;
    for (i, k) in K.iter().enumerate() {
        let at = |j: usize| w.get(j & 15).copied().unwrap_or(0);
        let wi = if i < 16 {
            let mut word = 0;
            for b in 0..4 {
                word = word << 8 | u32::from(padded(data, total, start + 4 * i + b));
            }
            word
        } else {
            let (w15, w2) = (at(i + 1), at(i + 14));
            let s0 = w15.rotate_right(7) ^ w15.rotate_right(18) ^ (w15 >> 3);
            let s1 = w2.rotate_right(17) ^ w2.rotate_right(19) ^ (w2 >> 10);
            at(i)
                .wrapping_add(s0)
                .wrapping_add(at(i + 9))
                .wrapping_add(s1)
        };
        if let Some(slot) = w.get_mut(i & 15) {
            *slot = wi;
        }
        let [a, b, c, d, e, f, g, hh] = s;
        let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
        let ch = (e & f) ^ (!e & g);
        let t1 = hh
            .wrapping_add(s1)
            .wrapping_add(ch)
            .wrapping_add(*k)
            .wrapping_add(wi);
        let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
        let maj = (a & b) ^ (a & c) ^ (b & c);
        s = [
            t1.wrapping_add(s0.wrapping_add(maj)),
            a,
            b,
            c,
            d.wrapping_add(t1),
            e,
            f,
            g,
        ];
    }
    for (x, y) in h.iter_mut().zip(s) {
        *x = x.wrapping_add(y);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(data: &[u8]) -> String {
        String::from_utf8(sha256_hex(data).to_vec()).unwrap()
    }

    /// FIPS 180-4 / NIST CAVP vectors, with the padding's edge lengths.
    #[test]
    fn sha256_known_answers() {
        let cases: [(&[u8], &str); 4] = [
            (
                b"",
                "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            ),
            (
                b"abc",
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            ),
            (
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
            ),
            (
                b"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
                "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(hex(input), want, "{:?}", input.len());
        }
        let million_a = vec![b'a'; 1_000_000];
        assert_eq!(
            hex(&million_a),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        );
    }

    /// Issue 27 item 8: keys were kept whole (300 distinct 1 MB keys, 302
    /// MB of wasm memory). A long key is now a fixed-size digest.
    #[test]
    fn long_keys_become_a_readable_prefix_and_their_digest() {
        let short = "GET https://api.example/items".to_string();
        assert_eq!(bounded(short.clone()), short);
        let edge = "k".repeat(MAX_KEY_UNITS);
        assert_eq!(bounded(edge.clone()), edge);
        let mut digests = std::collections::HashSet::new();
        for size in [MAX_KEY_UNITS + 1, 100_000, 1 << 20] {
            for tail in ["a", "b"] {
                let key = format!("GET https://api.example/{}{tail}", "p".repeat(size));
                let kept = bounded(key.clone());
                assert_eq!(kept, bounded(key.clone()), "the same key, the same digest");
                assert_eq!(kept.encode_utf16().count(), 64 + 8 + 64);
                assert!(kept.starts_with("GET https://api.example/ppp"), "{kept}");
                assert!(kept.contains("…sha256:"));
                assert!(digests.insert(kept), "distinct keys, distinct digests");
            }
        }
        // Counted in UTF-16 units, as JavaScript counts: 2048 'é' are 4096
        // bytes but 2048 units (kept); 1025 emoji are 2050 units.
        let accents = "é".repeat(MAX_KEY_UNITS);
        assert_eq!(bounded(accents.clone()), accents);
        let emoji = "😀".repeat(1025);
        let kept = bounded(emoji);
        assert!(kept.starts_with(&"😀".repeat(64)), "cut at a char boundary");
        assert!(kept.encode_utf16().count() <= MAX_KEY_UNITS);
    }
}
