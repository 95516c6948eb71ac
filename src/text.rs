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

/// The parts of an http(s) URL as `URL.href` serializes it.
#[derive(Debug, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // used by src/web
pub struct HttpHref<'a> {
    /// Scheme and authority (`https://host:port`): the URL's origin when
    /// it carries no credentials.
    pub origin: &'a str,
    /// The path, without query or fragment.
    pub path: &'a str,
    /// Whether the authority holds `user[:password]@`.
    pub credentials: bool,
}

/// Splits a serialized http(s) URL without asking the host for each part;
/// `None` for any other scheme. In a serialized URL a `@` in the authority
/// can only end the user info (one inside it is percent-encoded), and the
/// authority ends at the first `/`, `?` or `#`.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub fn split_http_href(href: &str) -> Option<HttpHref<'_>> {
    let scheme = if href.starts_with("http://") {
        7
    } else if href.starts_with("https://") {
        8
    } else {
        return None;
    };
    let after = href.get(scheme..)?;
    let authority = after.find(['/', '?', '#']).unwrap_or(after.len());
    let tail = after.get(authority..)?;
    let path = tail.find(['?', '#']).unwrap_or(tail.len());
    Some(HttpHref {
        origin: href.get(..scheme + authority)?,
        path: tail.get(..path)?,
        credentials: after.get(..authority)?.contains('@'),
    })
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
    fn http_hrefs_split_like_the_url_getters() {
        // (href, origin, pathname, credentials) as URL's own getters give them.
        let cases = [
            (
                "https://api.example.com/v1/items?x=1#top",
                "https://api.example.com",
                "/v1/items",
                false,
            ),
            (
                "http://127.0.0.1:8080/",
                "http://127.0.0.1:8080",
                "/",
                false,
            ),
            (
                "http://[::1]:3000/a/b/?q#f",
                "http://[::1]:3000",
                "/a/b/",
                false,
            ),
            (
                "https://u:p@h.example/p",
                "https://u:p@h.example",
                "/p",
                true,
            ),
            ("https://u@h.example/p", "https://u@h.example", "/p", true),
            (
                "https://h.example/a%40b/c@d",
                "https://h.example",
                "/a%40b/c@d",
                false,
            ),
            ("https://h.example/?a@b", "https://h.example", "/", false),
        ];
        for (href, origin, path, credentials) in cases {
            let got = split_http_href(href).unwrap_or_else(|| unreachable!("{href}"));
            assert_eq!(
                got,
                HttpHref {
                    origin,
                    path,
                    credentials
                },
                "{href}"
            );
        }
        for other in [
            "data:text/plain,hi",
            "blob:https://a/uuid",
            "file:///tmp/x",
            "ftp://h/p",
            "httpx://h/",
        ] {
            assert_eq!(split_http_href(other), None, "{other}");
        }
    }

    #[test]
    fn cat_joins() {
        assert_eq!(cat(&["a", "", "bc"]), "abc");
        assert_eq!(cat(&[]), "");
    }
}
