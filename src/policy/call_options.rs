//! A call's own options that are not policy settings: the request's
//! `method`, `idempotencyKey` (and an `Idempotency-Key` header), the
//! `responseType`, and `schema()`'s `maxAgeMs`, `version` and `query`
//! values.
//!
//! The web side only reads JS values into the plain values below (a key of
//! the wrong JS type is its own `OptionsError`); every rule on those values
//! is here, where the native tests at the end of this file prove each one:
//! the valid inputs, each invalid kind and the boundaries.

use super::options::{is_token, OptionsError, MAX_DURATION_MS};
use crate::text::cat;

type Result<T> = std::result::Result<T, OptionsError>;

/// `method`: a token fetch can send, uppercased; GET when absent.
pub fn method(m: Option<&str>) -> Result<String> {
    let Some(m) = m else {
        return Ok("GET".to_owned());
    };
    if !is_token(m) {
        return Err(OptionsError::new("method", "is not an HTTP method token"));
    }
    let m = m.to_ascii_uppercase();
    // The methods fetch refuses to send.
    if matches!(m.as_str(), "CONNECT" | "TRACE" | "TRACK") {
        return Err(OptionsError::new("method", "is a method fetch cannot send"));
    }
    Ok(m)
}

/// `idempotencyKey` as read from JS: `true`/`false`, or a string.
pub enum RawIdemKey {
    Flag(bool),
    Text(String),
}

/// A call's idempotency key: one to make up, or the caller's.
#[derive(Debug, PartialEq)]
pub enum IdemKey {
    Random,
    Given(String),
}

/// `idempotencyKey: string | true`; absent means none, and `false` is of
/// the wrong type (README, "idempotencyKey": a key of the wrong type is invalid).
pub fn idempotency_key(raw: Option<RawIdemKey>) -> Result<Option<IdemKey>> {
    match raw {
        None => Ok(None),
        Some(RawIdemKey::Flag(false)) => Err(OptionsError::new(
            "idempotencyKey",
            "must be a string or true",
        )),
        Some(RawIdemKey::Flag(true)) => Ok(Some(IdemKey::Random)),
        Some(RawIdemKey::Text(s)) => match idempotency_key_problem(&s) {
            Some(problem) => Err(OptionsError::new("idempotencyKey", problem)),
            None => Ok(Some(IdemKey::Given(s))),
        },
    }
}

/// An `Idempotency-Key` header the caller set under `option` follows the
/// option's rule: a blank one would make a POST retryable with nothing for
/// the server to deduplicate by.
pub fn header_idempotency_key(option: &str, key: &str) -> Result<()> {
    match idempotency_key_problem(key) {
        Some(problem) => Err(OptionsError::new(
            option,
            &cat(&["its Idempotency-Key ", problem]),
        )),
        None => Ok(()),
    }
}

/// What is wrong with `key` as an idempotency key: None when it is 1 to
/// 255 printable ASCII characters, not all spaces (README, "idempotencyKey"). It goes as a
/// header value, so outer spaces are trimmed on the wire as fetch trims
/// every header's; a blank key would make a POST retryable with nothing
/// for the server to deduplicate by.
fn idempotency_key_problem(key: &str) -> Option<&'static str> {
    if key.is_empty() || key.len() > 255 {
        return Some("must be 1 to 255 characters");
    }
    if !key.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Some("must be printable ASCII (it is sent as a header)");
    }
    if key.bytes().all(|b| b == b' ') {
        return Some("must not be blank");
    }
    None
}

/// What a call resolves with.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ResponseType {
    Json,
    Text,
    Bytes,
    Response,
}

impl ResponseType {
    pub fn name(self) -> &'static str {
        match self {
            ResponseType::Json => "json",
            ResponseType::Text => "text",
            ResponseType::Bytes => "bytes",
            ResponseType::Response => "response",
        }
    }

    /// `responseType`; JSON when absent.
    pub fn parse(s: Option<&str>) -> Result<ResponseType> {
        match s {
            None | Some("json") => Ok(ResponseType::Json),
            Some("text") => Ok(ResponseType::Text),
            Some("bytes") => Ok(ResponseType::Bytes),
            Some("response") => Ok(ResponseType::Response),
            Some(_) => Err(OptionsError::new(
                "responseType",
                "must be json, text, bytes or response",
            )),
        }
    }

    /// `schema()` stores what it read: JSON or text, never bytes or a Response.
    pub fn for_schema(self) -> Result<ResponseType> {
        match self {
            ResponseType::Json | ResponseType::Text => Ok(self),
            _ => Err(OptionsError::new(
                "responseType",
                "must be json or text for schema()",
            )),
        }
    }
}

/// `schema()`'s `maxAgeMs`: an integer from 0 to 2^31-1; absent, any age.
pub fn max_age_ms(v: Option<f64>) -> Result<Option<f64>> {
    match v {
        Some(v) if !((0.0..=MAX_DURATION_MS).contains(&v) && v.fract() == 0.0) => Err(
            OptionsError::new("maxAgeMs", "must be an integer in 0..2147483647"),
        ),
        v => Ok(v),
    }
}

/// A JS value as the rules below see it: its kind, and a number's value.
#[derive(Clone, Copy, Debug)]
pub enum Scalar {
    Text,
    Number(f64),
    Bool,
    Other,
}

/// `schema()`'s `version`: a string or a finite number.
pub fn version(v: Scalar) -> Result<()> {
    match v {
        Scalar::Text => Ok(()),
        Scalar::Number(n) if n.is_finite() => Ok(()),
        _ => Err(OptionsError::new(
            "version",
            "must be a string or a finite number",
        )),
    }
}

/// One value of the `query` option: a string, a finite number or a boolean.
pub fn query_value(v: Scalar) -> Result<()> {
    match v {
        Scalar::Text | Scalar::Bool => Ok(()),
        Scalar::Number(n) if n.is_finite() => Ok(()),
        Scalar::Number(_) => Err(OptionsError::new("query", "numbers must be finite")),
        Scalar::Other => Err(OptionsError::new(
            "query",
            "values must be strings, numbers or booleans",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejects<T: std::fmt::Debug>(r: Result<T>, option: &str, reason: &str) {
        let e = r.expect_err("must be refused");
        assert_eq!((e.option.as_str(), e.reason.as_str()), (option, reason));
    }

    #[test]
    fn method_defaults_to_get_and_is_uppercased() {
        assert_eq!(method(None).unwrap(), "GET");
        assert_eq!(method(Some("post")).unwrap(), "POST");
        assert_eq!(method(Some("m-search")).unwrap(), "M-SEARCH");
        // Every tchar is allowed, each alone.
        for c in "!#$%&'*+-.^_`|~09azAZ".chars() {
            assert!(method(Some(&c.to_string())).is_ok(), "{c}");
        }
    }

    #[test]
    fn method_must_be_a_token() {
        for bad in ["", "GET POST", "GÉT", "a,b", "x\n", "(get)", "a/b", "\"x\""] {
            rejects(method(Some(bad)), "method", "is not an HTTP method token");
        }
    }

    #[test]
    fn method_fetch_cannot_send_is_refused_in_any_case() {
        for bad in ["CONNECT", "trace", "Track"] {
            rejects(method(Some(bad)), "method", "is a method fetch cannot send");
        }
        // Only those three: a longer name is just a method.
        assert_eq!(method(Some("connects")).unwrap(), "CONNECTS");
    }

    #[test]
    fn idempotency_key_true_false_absent_and_given() {
        assert_eq!(idempotency_key(None).unwrap(), None);
        rejects(
            idempotency_key(Some(RawIdemKey::Flag(false))),
            "idempotencyKey",
            "must be a string or true",
        );
        assert_eq!(
            idempotency_key(Some(RawIdemKey::Flag(true))).unwrap(),
            Some(IdemKey::Random)
        );
        assert_eq!(
            idempotency_key(Some(RawIdemKey::Text("order-1".into()))).unwrap(),
            Some(IdemKey::Given("order-1".into()))
        );
    }

    #[test]
    fn idempotency_key_length_is_1_to_255() {
        let given = |s: String| idempotency_key(Some(RawIdemKey::Text(s)));
        assert!(given("k".into()).is_ok());
        assert!(given("k".repeat(255)).is_ok());
        for bad in [String::new(), "k".repeat(256)] {
            rejects(given(bad), "idempotencyKey", "must be 1 to 255 characters");
        }
    }

    #[test]
    fn idempotency_key_is_printable_ascii_not_blank() {
        let given = |s: &str| idempotency_key(Some(RawIdemKey::Text(s.into())));
        for good in ["a b", "~!", " a", "a ", " a b "] {
            assert!(given(good).is_ok(), "{good:?}");
        }
        let reason = "must be printable ASCII (it is sent as a header)";
        for bad in ["é", "a\tb", "a\nb", "\u{7f}"] {
            rejects(given(bad), "idempotencyKey", reason);
        }
        for blank in [" ", "   "] {
            rejects(given(blank), "idempotencyKey", "must not be blank");
        }
    }

    #[test]
    fn a_header_key_follows_the_options_rule_under_its_own_name() {
        assert!(header_idempotency_key("headers", "k-1").is_ok());
        rejects(
            header_idempotency_key("headers", ""),
            "headers",
            "its Idempotency-Key must be 1 to 255 characters",
        );
        rejects(
            header_idempotency_key("headers", "a\u{1}"),
            "headers",
            "its Idempotency-Key must be printable ASCII (it is sent as a header)",
        );
    }

    #[test]
    fn response_types() {
        assert_eq!(ResponseType::parse(None).unwrap(), ResponseType::Json);
        for t in [
            ResponseType::Json,
            ResponseType::Text,
            ResponseType::Bytes,
            ResponseType::Response,
        ] {
            assert_eq!(ResponseType::parse(Some(t.name())).unwrap(), t);
        }
        for bad in ["", "JSON", "blob", "arrayBuffer"] {
            rejects(
                ResponseType::parse(Some(bad)),
                "responseType",
                "must be json, text, bytes or response",
            );
        }
    }

    #[test]
    fn schema_takes_json_or_text_only() {
        assert!(ResponseType::Json.for_schema().is_ok());
        assert!(ResponseType::Text.for_schema().is_ok());
        for t in [ResponseType::Bytes, ResponseType::Response] {
            rejects(
                t.for_schema(),
                "responseType",
                "must be json or text for schema()",
            );
        }
    }

    #[test]
    fn max_age_is_an_integer_from_0_to_2_pow_31_minus_1() {
        assert_eq!(max_age_ms(None).unwrap(), None);
        for ok in [0.0, 1.0, 60_000.0, MAX_DURATION_MS] {
            assert_eq!(max_age_ms(Some(ok)).unwrap(), Some(ok));
        }
        for bad in [
            -1.0,
            -0.5,
            0.5,
            MAX_DURATION_MS + 1.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            rejects(
                max_age_ms(Some(bad)),
                "maxAgeMs",
                "must be an integer in 0..2147483647",
            );
        }
    }

    #[test]
    fn version_is_a_string_or_a_finite_number() {
        for ok in [Scalar::Text, Scalar::Number(0.0), Scalar::Number(-2.5)] {
            assert!(version(ok).is_ok());
        }
        for bad in [
            Scalar::Number(f64::NAN),
            Scalar::Number(f64::INFINITY),
            Scalar::Bool,
            Scalar::Other,
        ] {
            rejects(
                version(bad),
                "version",
                "must be a string or a finite number",
            );
        }
    }

    #[test]
    fn query_values_are_strings_finite_numbers_or_booleans() {
        for ok in [Scalar::Text, Scalar::Bool, Scalar::Number(-1.5)] {
            assert!(query_value(ok).is_ok());
        }
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            rejects(
                query_value(Scalar::Number(bad)),
                "query",
                "numbers must be finite",
            );
        }
        rejects(
            query_value(Scalar::Other),
            "query",
            "values must be strings, numbers or booleans",
        );
    }
}
