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

/// Whether `input`, resolved against an http(s) base, is the base's origin
/// followed by `input` exactly as written: a path-absolute reference (`/`
/// not followed by `/` or `\\`) made only of characters the URL parser
/// keeps as they are in a path, a query and a fragment, with nothing in its
/// path that could be a dot segment (`/.`, or `%2e` in any case) for the
/// parser to remove. Anything else (spaces, quotes, non-ASCII, tabs, a
/// backslash) is the parser's to resolve.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub fn path_absolute_as_written(input: &str) -> bool {
    let bytes = input.as_bytes();
    if bytes.first() != Some(&b'/') || matches!(bytes.get(1), Some(b'/' | b'\\')) {
        return false;
    }
    let mut in_path = true;
    let mut last = [0u8; 2];
    for &b in bytes {
        if !(b.is_ascii_alphanumeric() || b"-._~!$&()*+,;=:@/?#%".contains(&b)) {
            return false;
        }
        in_path &= b != b'?' && b != b'#';
        let dot = (last[1] == b'/' && b == b'.') || (last == *b"%2" && b | 0x20 == b'e');
        if in_path && dot {
            return false;
        }
        last = [last[1], b];
    }
    true
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
    fn path_absolute_references_written_as_the_parser_writes_them() {
        for kept in [
            "/",
            "/echo",
            "/v1/items?x=1&y=a+b#top",
            "/a%20b/c?q=%zz",
            "/a:b@c;d=e,f!$*()~_-/?/?x#y#z",
            "/?",
            "/#",
            "/a.b/c.json",
            "/x?p=/./../",
        ] {
            assert!(path_absolute_as_written(kept), "{kept}");
        }
        for parsed in [
            "",
            "echo",
            "./echo",
            "//host/x",
            "/\\host/x",
            "/a/./b",
            "/a/../b",
            "/a/..",
            "/.well-known/x",
            "/a/%2e%2e/b",
            "/a/%2E/b",
            "/a b",
            "/a\tb",
            "/a\\b",
            "/a\"b",
            "/a'b",
            "/a<b>",
            "/a^b",
            "/a{b}",
            "/a|b",
            "/a`b",
            "/é",
            "http://host/x",
            " /x",
        ] {
            assert!(!path_absolute_as_written(parsed), "{parsed}");
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
