//! String building without `core::fmt`.
//!
//! `format!` pulls the formatting machinery (and, for floats, the
//! Grisu/Dragon printers) into the wasm: about 20 KB for a handful of
//! messages. These two helpers are all the crate needs.

/// The concatenation of `parts`.
pub fn cat(parts: &[&str]) -> String {
    let mut s = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for p in parts {
        s.push_str(p);
    }
    s
}

/// `n` in decimal.
pub fn decimal(mut n: u64) -> String {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        if let Some(d) = digits.get_mut(i) {
            *d = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 || i == 0 {
            break;
        }
    }
    digits
        .get(i..)
        .and_then(|d| std::str::from_utf8(d).ok())
        .unwrap_or("0")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_matches_display() {
        for n in [0, 1, 9, 10, 99, 100, 2_147_483_647, u64::MAX] {
            assert_eq!(decimal(n), n.to_string());
        }
    }

    #[test]
    fn cat_joins() {
        assert_eq!(cat(&["a", "", "bc"]), "abc");
        assert_eq!(cat(&[]), "");
    }
}
