//! A call's URL: joined under `baseUrl` (`policy::href`) or resolved against
//! the page, and split into its href and endpoint (origin and path, what
//! the default breaker key is made of). A path-absolute URL the parser
//! would keep as written is written here in wasm, without a `new URL` per
//! call; the parser resolves the rest.

use wasm_bindgen::prelude::*;
use web_sys::Url;

use super::host::{instance_of, location_href, parse_url, Class};
use crate::policy::href;
use crate::policy::options::OptionsError;
use crate::text::{cat, path_absolute_as_written, split_http_href};

type Result<T> = std::result::Result<T, OptionsError>;

/// What a client's relative URLs resolve against.
pub struct Base {
    /// `baseUrl` as a JS string, passed to `new URL` as it is; `None`: the page.
    url: Option<JsValue>,
    /// `baseUrl` as text without query and fragment, which relative inputs
    /// join under and a joined URL must stay within (`None`: the page,
    /// which inputs resolve against as fetch resolves them).
    joins: Option<String>,
    /// The origin of `baseUrl`, else of the page, when it is http(s): a
    /// path-absolute URL of plain characters is this and itself
    /// ([`path_absolute_as_written`]). (A page's origin does not change
    /// while the client lives.)
    origin: Option<String>,
}

impl Base {
    /// `baseUrl` (`None`: the page) and `somewhere`, the address it stands
    /// for now ([`Base::href`]).
    pub fn new(url: Option<JsValue>, somewhere: Option<&str>) -> Base {
        let origin = somewhere
            .and_then(split_http_href)
            .filter(|h| !h.credentials)
            .map(|h| h.origin.to_owned());
        let joins = url
            .as_ref()
            .and_then(JsValue::as_string)
            .map(|base| href::base_of(&base).to_owned());
        Base { url, joins, origin }
    }

    /// The origin of `baseUrl`, else of the page, when it is http(s).
    pub fn origin(&self) -> Option<&str> {
        self.origin.as_deref()
    }

    /// `baseUrl`, when the client has one.
    pub fn url(&self) -> Option<&JsValue> {
        self.url.as_ref()
    }

    /// `baseUrl`, else the page's address as it is now.
    pub fn href(&self) -> JsValue {
        self.url.clone().unwrap_or_else(location_href)
    }

    /// `input` joined under `baseUrl` when the client has one and `input`
    /// is relative: the joined text, and the base it must stay within
    /// ([`within`]).
    pub fn joined(&self, input: &str) -> Option<(String, &str)> {
        let base = self.joins.as_deref()?;
        Some((href::join(base, input)?, base))
    }

    /// Resolves `input` (string or URL; [`endpoint`] then refuses
    /// userinfo): its href, and the host's `URL` of it unless the href was
    /// written in wasm (the origin and a path-absolute URL the parser would
    /// keep as written, given with or without that origin).
    pub fn resolve(&self, input: &JsValue) -> Result<(String, Option<Url>)> {
        let given = input.as_string();
        let joined = given.as_deref().and_then(|t| self.joined(t));
        let text = joined
            .as_ref()
            .map(|(j, _)| j.as_str())
            .or(given.as_deref());
        if let (Some(origin), Some(text)) = (&self.origin, text) {
            // The same, written out with that origin first (as links a server
            // sends are, and as a joined URL is), is already as the parser
            // would write it (and has no dot segment to climb with).
            let path = text
                .strip_prefix(origin.as_str())
                .filter(|p| p.starts_with('/'));
            if path_absolute_as_written(path.unwrap_or(text)) {
                let prefix = if path.is_some() { "" } else { origin };
                return Ok((cat(&[prefix, text]), None));
            }
        }
        if text.is_none() && !instance_of(input, Class::Url) {
            return Err(OptionsError::new("url", "must be a string or a URL"));
        }
        let url = match &joined {
            Some((j, _)) => parse_url(&JsValue::from_str(j), &JsValue::UNDEFINED),
            None => parse_url(input, &self.href()),
        }
        .map_err(|_| invalid_url())?;
        let href = url.href();
        if let Some((_, under)) = &joined {
            within(under, &href, "url")?;
        }
        Ok((href, Some(url)))
    }
}

/// Refuses (as `option`) a joined URL whose `..` segments climbed above
/// `baseUrl`'s path.
pub fn within(base: &str, href: &str, option: &str) -> Result<()> {
    if href::within(base, href) {
        return Ok(());
    }
    Err(OptionsError::new(
        option,
        "climbs above baseUrl's path (a '..' segment)",
    ))
}

/// `baseUrl`, an absolute URL without credentials, as a JS string; for a
/// derived client (`parent`: its parent's `Base`), a relative one joined
/// under its parent's `baseUrl` as a call's URL is (else resolved against
/// the page).
pub fn read_base(given: &str, parent: Option<&Base>) -> Result<JsValue> {
    let joined = parent.and_then(|p| p.joined(given));
    let text = joined.as_ref().map_or(given, |(j, _)| j.as_str());
    let against = parent.map_or(JsValue::UNDEFINED, Base::href);
    let url = parse_url(&JsValue::from_str(text), &against)
        .map_err(|_| OptionsError::new("baseUrl", "is not an absolute URL"))?;
    let href = url.href();
    if let Some((_, under)) = &joined {
        within(under, &href, "baseUrl")?;
    }
    if !url.username().is_empty() || !url.password().is_empty() {
        return Err(OptionsError::new("baseUrl", "must not contain credentials"));
    }
    Ok(JsValue::from(href))
}

fn invalid_url() -> OptionsError {
    OptionsError::new("url", "is not a valid URL")
}

/// `new URL(href)` of an absolute href.
pub fn parse_href(href: &str) -> Result<Url> {
    parse_url(&JsValue::from_str(href), &JsValue::UNDEFINED).map_err(|_| invalid_url())
}

/// The href and its endpoint (origin and path: what the default breaker
/// key is made of), refusing userinfo without echoing it. An http(s) href
/// is split in wasm; any other is read through the getters of its `URL`
/// (`url`, else parsed from the href).
pub fn endpoint(href: String, url: Option<Url>) -> Result<(String, String)> {
    let (endpoint, credentials) = match split_http_href(&href) {
        Some(h) => (cat(&[h.origin, h.path]), h.credentials),
        None => {
            let url = match url {
                Some(url) => url,
                None => parse_href(&href)?,
            };
            let endpoint = match url.origin() {
                // data: has nothing to key by but its payload: one key.
                _ if url.protocol() == "data:" => url.protocol(),
                // capacitor://, app://, file: have no origin either.
                o if o == "null" => cat(&[&url.protocol(), "//", &url.host(), &url.pathname()]),
                o => cat(&[&o, &url.pathname()]),
            };
            let credentials = !url.username().is_empty() || !url.password().is_empty();
            (endpoint, credentials)
        }
    };
    if credentials {
        return Err(OptionsError::new(
            "url",
            "must not contain credentials (user:password@)",
        ));
    }
    Ok((href, endpoint))
}
