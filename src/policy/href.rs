//! A call's URL as text, without the host's parser: a relative input
//! joined under `baseUrl`'s path, and the URL as an error message shows it.
//!
//! # Joining (README, "Client options": `baseUrl`)
//!
//! A relative input is appended to `baseUrl`'s path, as axios's
//! `combineURLs` does: the base without its trailing slash, one slash, the
//! input without its leading slashes. So `https://api.example.com/v1`, with
//! or without the trailing slash, and `/users/42` or `users/42` all give
//! `https://api.example.com/v1/users/42`. Resolving a reference instead
//! (`new URL('/users/42', base)`) drops the base's path for a leading
//! slash: users of a `baseUrl` got 404s and did not see why. Besides:
//! * an input with a scheme (`https:`, `data:`) is absolute, used as given
//!   ([`join`]); `//host/x` has none and is joined like any path, so
//!   no relative input moves a call (and the token `auth` adds) elsewhere;
//! * a query or fragment alone (`?page=2`) follows the base as written;
//! * the joined URL, once the parser has removed its dot segments, must
//!   still be the base's path or under it ([`within`]): `..` cannot climb
//!   out of `baseUrl` (`OptionsError('url')`, nothing sent).
//!
//! # Shown in messages
//!
//! [`shown`]: an error says which call failed (`GET https://api.example.com/users?id=…`)
//! without what the URL may carry that is the user's: query values, userinfo,
//! the fragment, a `data:` payload.

use crate::text::{cat, split_http_href};

/// `input` joined under `base` (a [`base_of`]; the module docs say how); `None` when `input`
/// is absolute: after the C0 controls and spaces the parser strips, it
/// starts with a scheme (`[A-Za-z][A-Za-z0-9+.-]*:`), and is used as
/// given. What comes back is for the parser (which removes dot segments and
/// trailing spaces; [`within`] then checks the path).
pub fn join(base: &str, input: &str) -> Option<String> {
    let b = input.as_bytes();
    let mut start = 0;
    while b.get(start).is_some_and(|&c| c <= b' ') {
        start += 1;
    }
    let mut end = start;
    while b
        .get(end)
        .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
    {
        end += 1;
    }
    let scheme = b.get(start).is_some_and(u8::is_ascii_alphabetic) && b.get(end) == Some(&b':');
    if scheme {
        return None;
    }
    if matches!(b.get(start), None | Some(b'?' | b'#')) {
        return Some(cat(&[base, input.get(start..)?]));
    }
    while b.get(start) == Some(&b'/') {
        start += 1;
    }
    let base = base.strip_suffix('/').unwrap_or(base);
    Some(cat(&[base, "/", input.get(start..)?]))
}

/// What a `baseUrl` (an absolute URL as the host serialises it) joins
/// by: itself without its query and fragment.
pub fn base_of(base: &str) -> &str {
    match split_http_href(base) {
        Some(h) => base.get(..h.origin.len() + h.path.len()).unwrap_or(base),
        None => base,
    }
}

/// Whether `href` (a joined URL as the parser serialises it) is still
/// `base` (a [`base_of`]) or under it: no `..` climbed above the base's
/// path. Both are the parser's, so comparing their text compares origin
/// and path.
pub fn within(base: &str, href: &str) -> bool {
    let dir = base.strip_suffix('/').unwrap_or(base);
    href.strip_prefix(dir)
        .is_some_and(|rest| matches!(rest.bytes().next(), None | Some(b'/' | b'?' | b'#')))
}

/// `method href`: which call failed, as an error message ends (ky's say
/// the same), with `href` as [`shown`] shows it.
pub fn described(method: &str, href: &str) -> String {
    cat(&[method, " ", &shown(href)])
}

/// `href` (absolute, as the host serialises it) as an error message shows
/// it: its origin and path, then the query's names with each value as `…`;
/// no userinfo, no fragment. Another scheme than http(s) shows its scheme
/// only (`data:…`): its payload may be anything.
pub fn shown(href: &str) -> String {
    let Some(h) = split_http_href(href) else {
        let scheme = href.find(':').and_then(|i| href.get(..i)).unwrap_or("");
        return cat(&[scheme, ":…"]);
    };
    // `http://` or `https://`, then the authority, whose `user:pw@` ends
    // at its last `@`.
    let start = h.origin.find(':').map_or(0, |i| i + 3);
    let host = h
        .origin
        .bytes()
        .rposition(|b| b == b'@')
        .map_or(start, |at| at + 1);
    let mut out = cat(&[
        h.origin.get(..start).unwrap_or(""),
        h.origin.get(host..).unwrap_or(""),
        h.path,
    ]);
    let rest = href.get(h.origin.len() + h.path.len()..).unwrap_or("");
    if let Some(query) = rest.strip_prefix('?') {
        let mut value = false;
        out.push('?');
        for c in query.chars() {
            match c {
                '#' => break,
                '&' => value = false,
                '=' if !value => {
                    value = true;
                    out.push_str("=…");
                    continue;
                }
                _ if value => continue,
                _ => {}
            }
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASES: [&str; 2] = ["https://api.example.com/v1", "https://api.example.com/v1/"];

    /// `input` under `base` as a client joins it: by [`base_of`].
    fn join(base: &str, input: &str) -> Option<String> {
        super::join(base_of(base), input)
    }

    #[test]
    fn both_slash_styles_join_under_the_base_path() {
        for base in BASES {
            for input in ["/users/42", "users/42", "//users/42", " /users/42"] {
                assert_eq!(
                    join(base, input).as_deref(),
                    Some("https://api.example.com/v1/users/42"),
                    "{base} + {input}"
                );
            }
            assert_eq!(
                join(base, "users?id=1&q=a/b").as_deref(),
                Some("https://api.example.com/v1/users?id=1&q=a/b")
            );
        }
        // A base at the root, with or without its slash (the host writes one).
        for base in ["https://api.example.com/", "https://api.example.com"] {
            assert_eq!(
                join(base, "/users").as_deref(),
                Some("https://api.example.com/users")
            );
        }
        // A query or fragment alone follows the base as written; nothing, the base.
        assert_eq!(
            join(BASES[0], "?page=2").as_deref(),
            Some("https://api.example.com/v1?page=2")
        );
        assert_eq!(
            join(BASES[1], "?page=2").as_deref(),
            Some("https://api.example.com/v1/?page=2")
        );
        assert_eq!(join(BASES[1], "").as_deref(), Some(BASES[1]));
        // The base's own query and fragment are not kept under a path.
        assert_eq!(
            join("https://api.example.com/v1/?key=1#top", "users").as_deref(),
            Some("https://api.example.com/v1/users")
        );
        // `//host` has no scheme: joined, it cannot leave the base's host.
        assert_eq!(
            join(BASES[0], "//evil.example/x").as_deref(),
            Some("https://api.example.com/v1/evil.example/x")
        );
    }

    #[test]
    fn an_input_with_a_scheme_is_used_as_given() {
        for absolute in [
            "https://other.example/x",
            "http://api.example.com/v1/users",
            "HTTPS://x/",
            "data:text/plain,hi",
            " blob:https://x/uuid",
            "web+app://x",
            "a:",
        ] {
            assert_eq!(join(BASES[0], absolute), None, "{absolute}");
        }
        for relative in [
            "users",
            "/a:b",
            "1x:y",
            "+x:y",
            "?a:b",
            "users/a:b",
            "./x:y",
            ":x",
        ] {
            assert!(join(BASES[0], relative).is_some(), "{relative}");
        }
    }

    #[test]
    fn dot_segments_stay_within_the_base_path() {
        let at = |path: &str| cat(&["https://api.example.com", path, "?q=/.."]);
        for base in ["https://api.example.com/v1", "https://api.example.com/v1/"] {
            for ok in ["/v1", "/v1/", "/v1/users", "/v1/a/b"] {
                assert!(within(base, &at(ok)), "{base} {ok}");
            }
            assert!(within(base, "https://api.example.com/v1#f"));
            for climbed in ["/", "/v2", "/v1x", "/v"] {
                assert!(!within(base, &at(climbed)), "{base} {climbed}");
            }
            assert!(!within(base, "https://other.example/v1/x"));
        }
        assert!(within("https://api.example.com/", &at("/anything")));
        assert_eq!(
            base_of("https://api.example.com/v1/?q#f"),
            "https://api.example.com/v1/"
        );
        assert_eq!(base_of("file:///x"), "file:///x");
    }

    #[test]
    fn messages_show_no_query_values_userinfo_or_fragment() {
        assert_eq!(
            shown("https://api.example.com/v1/users?id=42&token=s3cret&flag#frag"),
            "https://api.example.com/v1/users?id=…&token=…&flag"
        );
        assert_eq!(
            shown("https://user:pw@api.example.com:8443/x"),
            "https://api.example.com:8443/x"
        );
        assert_eq!(shown("http://x/"), "http://x/");
        assert_eq!(shown("data:text/plain,secret"), "data:…");
        assert_eq!(shown("http://x/?a=1&b&=c&d=#e=f"), "http://x/?a=…&b&=…&d=…");
        assert_eq!(
            described("POST", "https://u@x/o?id=7"),
            "POST https://x/o?id=…"
        );
    }
}
