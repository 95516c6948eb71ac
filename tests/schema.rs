//! Browser tests of `client.schema()`: wasm-bindgen-test in headless
//! Chromium (and Firefox ESR), against the fault server (`tests/server`).
//! LocalStorage is read and written directly to check what is stored, and
//! the server's request log shows what went over the network. Every test
//! uses its own storage prefix, so tests sharing the page's storage never
//! see each other's entries.
#![cfg(target_arch = "wasm32")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use js_sys::{Array, Function, Reflect};
use stormguard::Client;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

mod common;
use common::*;

wasm_bindgen_test_configure!(run_in_browser);

fn set(o: &JsValue, k: &str, v: &JsValue) {
    Reflect::set(o, &JsValue::from_str(k), v).unwrap();
}

fn text(v: &JsValue, k: &str) -> String {
    get(v, k).as_string().unwrap_or_default()
}

fn js(args: &str, body: &str) -> Function {
    Function::new_with_args(args, body)
}

fn ls_get(key: &str) -> Option<String> {
    js("k", "return localStorage.getItem(k)")
        .call1(&JsValue::NULL, &key.into())
        .unwrap()
        .as_string()
}

fn ls_set(key: &str, value: &str) {
    js("k, v", "localStorage.setItem(k, v)")
        .call2(&JsValue::NULL, &key.into(), &value.into())
        .unwrap();
}

fn ls_remove_prefix(prefix: &str) {
    js(
        "p",
        "for (const k of Object.keys(localStorage)) if (k.startsWith(p)) localStorage.removeItem(k)",
    )
    .call1(&JsValue::NULL, &prefix.into())
    .unwrap();
}

/// The stored entry under `key`, parsed.
fn entry(key: &str) -> JsValue {
    obj(&ls_get(key).unwrap_or_else(|| panic!("nothing stored under {key}")))
}

/// A client with a stand-in for the wrapper's `UserFns` (pkg-template/core.js),
/// which calls `validate` as the package's does, and asks nothing else.
fn client(options: &str) -> Client {
    let c = Client::new(obj(options)).unwrap();
    let fns = js(
        "",
        "return { flags: 0, validate: (f, on, value) => Reflect.apply(f, on, [value]) }",
    );
    c.set_user_fns(fns.call0(&JsValue::NULL).unwrap().unchecked_into());
    c
}

/// A client whose storage prefix is unique to the test.
fn client_with_prefix(prefix: &str, extra: &str) -> Client {
    let comma = if extra.is_empty() { "" } else { ", " };
    client(&format!(
        r#"{{"retry": false, "storage": {{"prefix": "{prefix}"}}{comma}{extra}}}"#
    ))
}

async fn schema_with(client: &Client, u: &str, options: JsValue) -> Result<JsValue, JsValue> {
    JsFuture::from(client.schema(JsValue::from_str(u), options)).await
}

async fn schema(client: &Client, u: &str, options: &str) -> JsValue {
    schema_with(client, u, obj(options))
        .await
        .unwrap_or_else(|e| panic!("schema() rejected: {}", text(&e, "name")))
}

/// Collects the events of `name` into the returned array.
fn events(client: &Client, name: &str) -> Array {
    let seen = Array::new();
    let push: Function = get(&seen, "push").unchecked_into();
    client.on(name.into(), push.bind0(&seen).into()).unwrap();
    seen
}

fn assert_source(r: &JsValue, source: &str) {
    assert_eq!(text(r, "source"), source, "source");
    assert_eq!(
        get(r, "stale").as_bool(),
        Some(source != "network"),
        "stale"
    );
    assert_eq!(get(r, "error").is_undefined(), source == "network", "error");
}

fn error_name(r: &JsValue) -> String {
    text(&get(r, "error"), "name")
}

#[wasm_bindgen_test]
async fn first_load_stores_the_entry_under_prefix_and_url() {
    let id = test_id("schema-first");
    let prefix = format!("{id}:");
    let c = client_with_prefix(&prefix, "");
    let u = url("/echo", &id);
    let before = js_sys::Date::now();
    let r = schema(&c, &u, "{}").await;
    assert_source(&r, "network");
    assert_eq!(text(&get(&r, "data"), "method"), "GET");
    assert!(get(&r, "ageMs").is_undefined());
    // The default key is the absolute URL; the entry is { t, data } (no v).
    let e = entry(&format!("{prefix}{u}"));
    let t = num(&e, "t");
    assert!(t >= before.floor() && t <= js_sys::Date::now(), "t = {t}");
    assert_eq!(text(&get(&e, "data"), "path"), "/echo");
    assert!(get(&e, "v").is_undefined());
    assert_eq!(
        js_sys::Object::keys(e.unchecked_ref::<js_sys::Object>()).length(),
        2,
        "only t and data"
    );
    assert_eq!(stat(&c, "fallbacks"), 0.0);
    ls_remove_prefix(&prefix);
}

#[wasm_bindgen_test]
async fn a_failing_server_serves_the_cached_copy() {
    let id = test_id("schema-cache");
    let prefix = format!("{id}:");
    let c = client_with_prefix(&prefix, "");
    let fallbacks = events(&c, "fallback");
    let first = schema(&c, &url("/echo", &id), r#"{"cacheKey": "doc"}"#).await;
    assert_source(&first, "network");
    sleep(30).await;
    let r = schema(&c, &url("/status/503", &id), r#"{"cacheKey": "doc"}"#).await;
    assert_source(&r, "cache");
    assert_eq!(text(&get(&r, "data"), "path"), "/echo");
    assert!(num(&r, "ageMs") >= 25.0, "ageMs {}", num(&r, "ageMs"));
    let err = get(&r, "error");
    assert_eq!(text(&err, "name"), "HttpError");
    assert_eq!(num(&err, "status"), 503.0);
    assert_eq!(stat(&c, "fallbacks"), 1.0);
    assert_eq!(fallbacks.length(), 1);
    let ev = fallbacks.get(0);
    assert_eq!(text(&ev, "errorName"), "HttpError");
    assert_eq!(text(&ev, "method"), "GET");
    assert_eq!(text(&ev, "url"), url("/status/503", &id));
    assert!(!text(&ev, "requestId").is_empty());
    assert_eq!(server_log(&id).await.length(), 2);
    ls_remove_prefix(&prefix);
}

#[wasm_bindgen_test]
async fn another_versions_copy_is_ignored() {
    let id = test_id("schema-version");
    let prefix = format!("{id}:");
    let c = client_with_prefix(&prefix, "");
    let ok = url("/echo", &id);
    let bad = url("/status/503", &id);
    schema(&c, &ok, r#"{"cacheKey": "doc", "version": 1}"#).await;
    assert_eq!(num(&entry(&format!("{prefix}doc")), "v"), 1.0);
    for other in [
        r#"{"cacheKey": "doc", "version": 2}"#,
        r#"{"cacheKey": "doc", "version": "1"}"#,
        r#"{"cacheKey": "doc"}"#,
    ] {
        let r = schema(&c, &bad, other).await;
        assert_source(&r, "none");
        assert!(get(&r, "data").is_undefined());
    }
    let r = schema(&c, &bad, r#"{"cacheKey": "doc", "version": 1}"#).await;
    assert_source(&r, "cache");
    // A string version round-trips too.
    schema(&c, &ok, r#"{"cacheKey": "doc", "version": "v2"}"#).await;
    let r = schema(&c, &bad, r#"{"cacheKey": "doc", "version": "v2"}"#).await;
    assert_source(&r, "cache");
    ls_remove_prefix(&prefix);
}

#[wasm_bindgen_test]
async fn max_age_ms_bounds_the_copy_served() {
    let id = test_id("schema-age");
    let prefix = format!("{id}:");
    let c = client_with_prefix(&prefix, "");
    schema(&c, &url("/echo", &id), r#"{"cacheKey": "doc"}"#).await;
    sleep(120).await;
    let bad = url("/status/503", &id);
    let r = schema(&c, &bad, r#"{"cacheKey": "doc", "maxAgeMs": 50}"#).await;
    assert_source(&r, "none");
    let r = schema(&c, &bad, r#"{"cacheKey": "doc", "maxAgeMs": 60000}"#).await;
    assert_source(&r, "cache");
    let age = num(&r, "ageMs");
    assert!((110.0..60_000.0).contains(&age), "ageMs {age}");
    ls_remove_prefix(&prefix);
}

#[wasm_bindgen_test]
async fn an_entry_over_max_entry_bytes_is_not_stored() {
    let id = test_id("schema-size");
    let prefix = format!("{id}:");
    let c = client(&format!(
        r#"{{"retry": false, "storage": {{"prefix": "{prefix}", "maxEntryBytes": 64}}}}"#
    ));
    let storage = events(&c, "storage");
    // /echo's document is far over 64 bytes: served, not stored.
    let r = schema(&c, &url("/echo", &id), r#"{"cacheKey": "big"}"#).await;
    assert_source(&r, "network");
    assert_eq!(ls_get(&format!("{prefix}big")), None);
    assert_eq!(storage.length(), 1);
    assert_eq!(text(&storage.get(0), "reason"), "tooLarge");
    // {"t":<13 digits>,"data":"<20 chars>"} is 49 UTF-16 units: 49 bytes in
    // UTF-8 for ASCII (stored), 69 for 20 'é' (not stored).
    let ascii = format!("/json?body=%22{}%22", "e".repeat(20));
    let r = schema(&c, &url(&ascii, &id), r#"{"cacheKey": "ascii"}"#).await;
    assert_source(&r, "network");
    assert!(ls_get(&format!("{prefix}ascii")).is_some());
    let accents = format!("/json?body=%22{}%22", "%C3%A9".repeat(20));
    let r = schema(&c, &url(&accents, &id), r#"{"cacheKey": "accents"}"#).await;
    assert_eq!(get(&r, "data").as_string().unwrap(), "é".repeat(20));
    assert_eq!(ls_get(&format!("{prefix}accents")), None);
    assert_eq!(storage.length(), 2);
    ls_remove_prefix(&prefix);
}

#[wasm_bindgen_test]
async fn corrupt_entries_are_an_empty_cache_and_an_event() {
    let id = test_id("schema-corrupt");
    let prefix = format!("{id}:");
    let c = client_with_prefix(&prefix, "");
    let storage = events(&c, "storage");
    let bad = url("/status/503", &id);
    let cases = [
        ("{not json", Some("SyntaxError")),
        ("null", None),
        ("[1, 2]", None),
        (r#"{"t": "yesterday", "data": 1}"#, None),
    ];
    for (i, (stored, thrown)) in cases.iter().enumerate() {
        ls_set(&format!("{prefix}doc"), stored);
        let r = schema(&c, &bad, r#"{"cacheKey": "doc", "fallback": 7}"#).await;
        assert_source(&r, "fallback");
        assert_eq!(get(&r, "data").as_f64(), Some(7.0));
        assert_eq!(storage.length(), i as u32 + 1, "{stored}");
        let ev = storage.get(i as u32);
        assert_eq!(text(&ev, "reason"), "corrupt");
        assert_eq!(get(&ev, "errorName").as_string().as_deref(), *thrown);
    }
    // A good response replaces the corrupt slot.
    schema(&c, &url("/echo", &id), r#"{"cacheKey": "doc"}"#).await;
    assert_eq!(
        text(&get(&entry(&format!("{prefix}doc")), "data"), "path"),
        "/echo"
    );
    let r = schema(&c, &bad, r#"{"cacheKey": "doc"}"#).await;
    assert_source(&r, "cache");
    ls_remove_prefix(&prefix);
}

/// Issue 14 item 8: a copy dated more than 60 s ahead of now (a forged entry,
/// or a wall clock stepped back) would be served as brand new whatever
/// `maxAgeMs`: it is corrupt (an empty cache and a `storage` event). So is
/// one dated before 1970. Another tab's clock a little ahead is fine.
#[wasm_bindgen_test]
async fn a_copy_dated_in_the_future_is_corrupt() {
    let id = test_id("schema-future");
    let prefix = format!("{id}:");
    let c = client_with_prefix(&prefix, "");
    let storage = events(&c, "storage");
    let bad = url("/status/503", &id);
    let key = format!("{prefix}doc");
    let ten_years = 10.0 * 365.0 * 86_400_000.0;
    let dated = |t: f64| format!(r#"{{"t": {t}, "data": "forged"}}"#);
    let cases = [
        (
            js_sys::Date::now() + ten_years,
            r#"{"cacheKey": "doc", "maxAgeMs": 1, "fallback": 7}"#,
        ),
        (
            js_sys::Date::now() + ten_years,
            r#"{"cacheKey": "doc", "fallback": 7}"#,
        ),
        (
            js_sys::Date::now() + 120_000.0,
            r#"{"cacheKey": "doc", "fallback": 7}"#,
        ),
        (-1.0, r#"{"cacheKey": "doc", "fallback": 7}"#),
    ];
    for (i, (t, options)) in cases.iter().enumerate() {
        ls_set(&key, &dated(*t));
        let r = schema(&c, &bad, options).await;
        assert_source(&r, "fallback");
        assert_eq!(get(&r, "data").as_f64(), Some(7.0), "t = {t}");
        assert_eq!(storage.length(), i as u32 + 1, "t = {t}");
        assert_eq!(text(&storage.get(i as u32), "reason"), "corrupt");
    }
    // 30 s ahead (another tab's clock): a copy, served as new.
    ls_set(&key, &dated(js_sys::Date::now() + 30_000.0));
    let r = schema(&c, &bad, r#"{"cacheKey": "doc", "maxAgeMs": 1000}"#).await;
    assert_source(&r, "cache");
    assert_eq!(text(&r, "data"), "forged");
    assert_eq!(num(&r, "ageMs"), 0.0);
    assert_eq!(storage.length(), cases.len() as u32);
    ls_remove_prefix(&prefix);
}

#[wasm_bindgen_test]
async fn a_full_quota_is_an_event_and_the_call_still_resolves() {
    let id = test_id("schema-quota");
    let prefix = format!("{id}:");
    let fill = format!("fill-{id}:");
    let c = client_with_prefix(&prefix, "");
    let storage = events(&c, "storage");
    // Fill the origin's storage under another prefix until even 16 chars fail.
    let filled = js(
        "p",
        "let i = 0;
         for (let n = 1 << 23; n >= 16;) {
           try { localStorage.setItem(p + i, 'x'.repeat(n)); i++; } catch (e) { n >>= 1; }
         }
         return i;",
    )
    .call1(&JsValue::NULL, &fill.as_str().into())
    .unwrap();
    let r = schema_with(&c, &url("/echo", &id), obj(r#"{"cacheKey": "doc"}"#)).await;
    let stored = ls_get(&format!("{prefix}doc"));
    ls_remove_prefix(&fill);
    assert!(filled.as_f64().unwrap() >= 1.0);
    let r = r.unwrap();
    assert_source(&r, "network");
    assert_eq!(text(&get(&r, "data"), "path"), "/echo");
    assert_eq!(stored, None);
    assert_eq!(storage.length(), 1);
    assert_eq!(text(&storage.get(0), "reason"), "write");
    assert!(
        text(&storage.get(0), "errorName").contains("Quota"),
        "{}",
        text(&storage.get(0), "errorName")
    );
    ls_remove_prefix(&prefix);
}

#[wasm_bindgen_test]
async fn storage_whose_access_throws_falls_back_to_memory() {
    let id = test_id("schema-denied");
    let prefix = format!("{id}:");
    let c = client_with_prefix(&prefix, "");
    let storage = events(&c, "storage");
    let saved = js(
        "",
        "const d = Object.getOwnPropertyDescriptor(globalThis, 'localStorage');
         Object.defineProperty(globalThis, 'localStorage', {
           configurable: true,
           get() { throw new DOMException('storage is disabled', 'SecurityError'); },
         });
         return d;",
    )
    .call0(&JsValue::NULL)
    .unwrap();
    let first = schema_with(&c, &url("/echo", &id), obj(r#"{"cacheKey": "doc"}"#)).await;
    let second = schema_with(&c, &url("/status/503", &id), obj(r#"{"cacheKey": "doc"}"#)).await;
    js(
        "d",
        "if (d) Object.defineProperty(globalThis, 'localStorage', d);
         else delete globalThis.localStorage;",
    )
    .call1(&JsValue::NULL, &saved)
    .unwrap();
    assert_source(&first.unwrap(), "network");
    let second = second.unwrap();
    assert_source(&second, "cache");
    assert_eq!(text(&get(&second, "data"), "path"), "/echo");
    assert_eq!(storage.length(), 2, "one event per access");
    for ev in storage.iter() {
        assert_eq!(text(&ev, "reason"), "access");
        assert_eq!(text(&ev, "errorName"), "SecurityError");
    }
    // The copy was in memory only, and storage works again.
    assert_eq!(ls_get(&format!("{prefix}doc")), None);
    schema(&c, &url("/echo", &id), r#"{"cacheKey": "doc"}"#).await;
    assert!(ls_get(&format!("{prefix}doc")).is_some());
    ls_remove_prefix(&prefix);
}

#[wasm_bindgen_test]
async fn another_prefixs_entries_are_never_touched() {
    let id = test_id("schema-prefix");
    let prefix = format!("{id}:");
    let other = format!("{id}-other:");
    let c = client_with_prefix(&prefix, "");
    let ok = url("/echo", &id);
    let bad = url("/status/503", &id);
    let keep = [
        (format!("{other}doc"), "kept 1".to_owned()),
        (format!("{other}{ok}"), "kept 2".to_owned()),
        (
            format!("{id}doc"),
            r#"{"t": 1, "data": "no colon"}"#.to_owned(),
        ),
    ];
    for (k, v) in &keep {
        ls_set(k, v);
    }
    let count = || {
        js("", "return localStorage.length")
            .call0(&JsValue::NULL)
            .unwrap()
            .as_f64()
            .unwrap()
    };
    let before = count();
    schema(&c, &ok, r#"{"cacheKey": "doc"}"#).await;
    schema(&c, &ok, "{}").await;
    schema(&c, &bad, r#"{"cacheKey": "doc"}"#).await;
    ls_set(&format!("{prefix}doc"), "{corrupt");
    schema(&c, &bad, r#"{"cacheKey": "doc"}"#).await;
    assert_eq!(count(), before + 2.0, "our two entries, nothing else");
    for (k, v) in &keep {
        assert_eq!(ls_get(k).as_deref(), Some(v.as_str()), "{k}");
    }
    ls_remove_prefix(&prefix);
    ls_remove_prefix(&other);
    ls_remove_prefix(&format!("{id}doc"));
}

#[wasm_bindgen_test]
async fn validate_false_is_not_cached_and_not_a_breaker_failure() {
    let id = test_id("schema-validate");
    let prefix = format!("{id}:");
    let c = client_with_prefix(&prefix, r#""breaker": {"consecutiveFailures": 1}"#);
    let ok = url("/echo", &id);
    let with = |body: &str| {
        let o = obj(r#"{"cacheKey": "doc"}"#);
        set(&o, "validate", &js("v", body));
        o
    };
    // Nothing cached yet: a rejected body gives 'none' and a ParseError.
    let r = schema_with(&c, &ok, with("return false")).await.unwrap();
    assert_source(&r, "none");
    assert_eq!(error_name(&r), "ParseError");
    assert!(!text(&get(&r, "error"), "requestId").is_empty());
    assert_eq!(ls_get(&format!("{prefix}doc")), None);

    let r = schema_with(&c, &ok, with("return v.method === 'GET'"))
        .await
        .unwrap();
    assert_source(&r, "network");
    let stored = ls_get(&format!("{prefix}doc")).unwrap();

    // A network copy that validate rejects (or throws on) is not stored;
    // the cached copy, which it accepts, is served.
    let second = format!("{ok}&n=2");
    let r = schema_with(&c, &second, with("return v.query.n !== '2'"))
        .await
        .unwrap();
    assert_source(&r, "cache");
    assert_eq!(error_name(&r), "ParseError");
    let throws = "if (v.query.n === '2') throw new TypeError('bad shape'); return true";
    let r = schema_with(&c, &second, with(throws)).await.unwrap();
    assert_source(&r, "cache");
    assert_eq!(text(&get(&get(&r, "error"), "cause"), "name"), "TypeError");
    assert_eq!(ls_get(&format!("{prefix}doc")).unwrap(), stored);
    // A cached copy is checked too: one that validate rejects is not served.
    let r = schema_with(&c, &ok, with("return false")).await.unwrap();
    assert_source(&r, "none");
    assert_eq!(error_name(&r), "ParseError");

    // The breaker (which opens on one failure) saw only successes.
    let breakers = c.breakers();
    assert_eq!(breakers.length(), 1);
    assert_eq!(text(&breakers.get(0), "state"), "closed");
    assert_eq!(num(&breakers.get(0), "failureRate"), 0.0);
    assert_eq!(stat(&c, "failures"), 4.0);
    let r = schema(&c, &ok, r#"{"cacheKey": "doc"}"#).await;
    assert_source(&r, "network");
    assert_eq!(server_log(&id).await.length(), 6);
    ls_remove_prefix(&prefix);
}

#[wasm_bindgen_test]
async fn an_open_breaker_serves_the_cache_without_a_request() {
    let id = test_id("schema-breaker");
    let quiet = test_id("schema-breaker-quiet");
    let prefix = format!("{id}:");
    let c = client_with_prefix(
        &prefix,
        r#""breaker": {"consecutiveFailures": 1, "openMs": 60000}"#,
    );
    schema(&c, &url("/echo", &id), r#"{"cacheKey": "doc"}"#).await;
    // One 503 opens the breaker of GET <origin>/status/503.
    let r = schema(&c, &url("/status/503", &id), r#"{"cacheKey": "doc"}"#).await;
    assert_source(&r, "cache");
    assert_eq!(error_name(&r), "HttpError");
    let open = c
        .breakers()
        .iter()
        .find(|b| text(b, "key").ends_with("/status/503"))
        .unwrap();
    assert_eq!(text(&open, "state"), "open");
    // Same breaker key (the id is in the query): refused before the network.
    let r = schema(&c, &url("/status/503", &quiet), r#"{"cacheKey": "doc"}"#).await;
    assert_source(&r, "cache");
    assert_eq!(error_name(&r), "CircuitOpenError");
    assert_eq!(text(&get(&r, "data"), "path"), "/echo");
    assert_eq!(server_log(&quiet).await.length(), 0);
    assert_eq!(stat(&c, "fallbacks"), 2.0);
    ls_remove_prefix(&prefix);
}

#[wasm_bindgen_test]
async fn fallback_then_none_when_there_is_no_copy() {
    let id = test_id("schema-fallback");
    let prefix = format!("{id}:");
    let c = client_with_prefix(&prefix, "");
    let fallbacks = events(&c, "fallback");
    let bad = url("/status/503", &id);
    let r = schema(&c, &bad, r#"{"fallback": {"title": "built in"}}"#).await;
    assert_source(&r, "fallback");
    assert_eq!(text(&get(&r, "data"), "title"), "built in");
    assert!(get(&r, "ageMs").is_undefined());
    assert_eq!(error_name(&r), "HttpError");
    // null is a fallback too; only an absent one gives 'none'.
    let r = schema(&c, &bad, r#"{"fallback": null}"#).await;
    assert_source(&r, "fallback");
    assert!(get(&r, "data").is_null());
    let r = schema(&c, &bad, "{}").await;
    assert_source(&r, "none");
    assert!(get(&r, "data").is_undefined());
    assert_eq!(error_name(&r), "HttpError");
    assert_eq!(stat(&c, "fallbacks"), 2.0);
    assert_eq!(fallbacks.length(), 2);
    // A network error resolves the same way.
    let r = schema(&c, &url("/reset", &id), "{}").await;
    assert_source(&r, "none");
    assert_eq!(error_name(&r), "NetworkError");
    ls_remove_prefix(&prefix);
}

#[wasm_bindgen_test]
async fn a_caller_abort_rejects_even_with_a_copy() {
    let id = test_id("schema-abort");
    let prefix = format!("{id}:");
    let c = client_with_prefix(&prefix, "");
    schema(&c, &url("/echo", &id), r#"{"cacheKey": "doc"}"#).await;
    let ctl = web_sys::AbortController::new().unwrap();
    let o = obj(r#"{"cacheKey": "doc", "fallback": 1}"#);
    set(&o, "signal", &ctl.signal());
    let later = ctl.clone();
    wasm_bindgen_futures::spawn_local(async move {
        sleep(50).await;
        later.abort_with_reason(&"gone".into());
    });
    let err = schema_with(&c, &url("/hang", &id), o).await.unwrap_err();
    assert_eq!(text(&err, "name"), "AbortError");
    assert_eq!(text(&err, "reason"), "gone");
    assert_eq!(stat(&c, "fallbacks"), 0.0);
    // A closed client rejects the same way.
    c.close();
    let err = schema_with(&c, &url("/echo", &id), obj(r#"{"cacheKey": "doc"}"#))
        .await
        .unwrap_err();
    assert_eq!(text(&err, "name"), "AbortError");
    ls_remove_prefix(&prefix);
}

#[wasm_bindgen_test]
async fn storage_false_keeps_the_copy_in_memory() {
    let id = test_id("schema-memory");
    let c = client(r#"{"retry": false, "storage": false}"#);
    let key = format!("{id}-doc");
    let cache_key = format!(r#"{{"cacheKey": "{key}"}}"#);
    schema(&c, &url("/echo", &id), &cache_key).await;
    assert_eq!(ls_get(&format!("stormguard:{key}")), None);
    let bad = url("/status/503", &id);
    let r = schema(&c, &bad, &cache_key).await;
    assert_source(&r, "cache");
    // Each read is a fresh copy: mutating one result changes nothing.
    set(&get(&r, "data"), "path", &"changed".into());
    let r = schema(&c, &bad, &cache_key).await;
    assert_eq!(text(&get(&r, "data"), "path"), "/echo");
    // The copy belongs to its client.
    let other = client(r#"{"retry": false, "storage": false}"#);
    assert_source(&schema(&other, &bad, &cache_key).await, "none");
}

#[wasm_bindgen_test]
async fn authorization_is_not_stored_unless_cache_key_is_given() {
    let id = test_id("schema-auth");
    let prefix = format!("{id}:");
    let ok = url("/echo", &id);
    let bad = url("/status/503", &id);
    // Client-level header, default key: neither stored nor served.
    let c = client_with_prefix(&prefix, r#""headers": {"Authorization": "Bearer s3cret"}"#);
    let storage = events(&c, "storage");
    assert_source(&schema(&c, &ok, "{}").await, "network");
    assert_eq!(ls_get(&format!("{prefix}{ok}")), None);
    ls_set(
        &format!("{prefix}{bad}"),
        r#"{"t": 1, "data": "someone else's"}"#,
    );
    assert_source(&schema(&c, &bad, "{}").await, "none");
    // An explicit cacheKey is the caller's decision: stored and served.
    schema(&c, &ok, r#"{"cacheKey": "mine"}"#).await;
    assert!(ls_get(&format!("{prefix}mine")).is_some());
    assert_source(&schema(&c, &bad, r#"{"cacheKey": "mine"}"#).await, "cache");
    // Call-level header, any case.
    let c2 = client_with_prefix(&prefix, "");
    let o = r#"{"headers": {"authorization": "Bearer s3cret"}}"#;
    assert_source(&schema(&c2, &ok, o).await, "network");
    assert_eq!(ls_get(&format!("{prefix}{ok}")), None);
    // Without Authorization the same URL is stored.
    schema(&c2, &ok, "{}").await;
    assert!(ls_get(&format!("{prefix}{ok}")).is_some());
    assert_eq!(storage.length(), 0);
    ls_remove_prefix(&prefix);
}

#[wasm_bindgen_test]
async fn every_credential_header_keeps_the_copy_out_of_local_storage() {
    let id = test_id("schema-creds");
    let prefix = format!("{id}:");
    let ok = url("/echo", &id);
    let bad = url("/status/503", &id);
    // Another user's copy under the URL: never served to a credentialed call.
    ls_set(
        &format!("{prefix}{bad}"),
        r#"{"t": 1, "data": "someone else's"}"#,
    );
    for header in ["Cookie", "Proxy-Authorization", "X-API-Key"] {
        // The client's header, then the call's own.
        let c = client_with_prefix(&prefix, &format!(r#""headers": {{"{header}": "s3cret"}}"#));
        assert_source(&schema(&c, &ok, "{}").await, "network");
        assert_eq!(ls_get(&format!("{prefix}{ok}")), None, "{header}");
        assert_source(&schema(&c, &bad, "{}").await, "none");
        let c = client_with_prefix(&prefix, "");
        let own = format!(r#"{{"headers": {{"{header}": "s3cret"}}}}"#);
        assert_source(&schema(&c, &ok, &own).await, "network");
        assert_eq!(ls_get(&format!("{prefix}{ok}")), None, "{header}");
        assert_source(&schema(&c, &bad, &own).await, "none");
    }
    ls_remove_prefix(&prefix);
}

#[wasm_bindgen_test]
async fn the_default_cache_key_holds_the_calls_own_headers() {
    let id = test_id("schema-hkey");
    let prefix = format!("{id}:");
    let ok = url("/echo", &id);
    let bad = url("/status/503", &id);
    let c = client_with_prefix(&prefix, r#""headers": {"X-Client": "same"}"#);
    let fr = r#"{"headers": {"Accept-Language": "fr"}}"#;
    // Stored under the URL and the call's own headers (not the client's).
    schema(&c, &ok, fr).await;
    assert!(ls_get(&format!("{prefix}{ok}\naccept-language:fr")).is_some());
    assert_eq!(ls_get(&format!("{prefix}{ok}")), None);
    // A copy under the URL alone answers only a call without headers.
    ls_set(&format!("{prefix}{bad}"), r#"{"t": 1, "data": "plain"}"#);
    assert_source(&schema(&c, &bad, fr).await, "none");
    assert_eq!(get(&schema(&c, &bad, "{}").await, "data"), "plain");
    ls_set(
        &format!("{prefix}{bad}\naccept-language:fr"),
        r#"{"t": 1, "data": "french"}"#,
    );
    assert_eq!(get(&schema(&c, &bad, fr).await, "data"), "french");
    let de = r#"{"headers": {"Accept-Language": "de"}}"#;
    assert_source(&schema(&c, &bad, de).await, "none");
    ls_remove_prefix(&prefix);
}

#[wasm_bindgen_test]
async fn invalid_schema_options_reject_with_options_error() {
    let id = test_id("schema-options");
    let c = client(r#"{"retry": false}"#);
    let u = url("/echo", &id);
    for (options, option) in [
        (r#"{"version": true}"#, "version"),
        (r#"{"cacheKey": 5}"#, "cacheKey"),
        (r#"{"maxAgeMs": -1}"#, "maxAgeMs"),
        (r#"{"maxAgeMs": 1.5}"#, "maxAgeMs"),
        (r#"{"validate": "yes"}"#, "validate"),
        (r#"{"responseType": "bytes"}"#, "responseType"),
    ] {
        let err = schema_with(&c, &u, obj(options)).await.unwrap_err();
        assert_eq!(text(&err, "name"), "OptionsError", "{options}");
        assert_eq!(text(&err, "option"), option);
    }
    assert_eq!(server_log(&id).await.length(), 0);
}

#[wasm_bindgen_test]
async fn storage_events_carry_no_data_or_header() {
    let id = test_id("schema-secret");
    let prefix = format!("{id}:");
    let c = client_with_prefix(&prefix, r#""headers": {"X-Token": "s3cret"}"#);
    let seen = events(&c, "storage");
    ls_set(&format!("{prefix}doc"), "{s3cret");
    schema(&c, &url("/status/503", &id), r#"{"cacheKey": "doc"}"#).await;
    assert_eq!(seen.length(), 1);
    let ev = seen.get(0);
    let keys: Vec<String> = js_sys::Object::keys(ev.unchecked_ref::<js_sys::Object>())
        .iter()
        .map(|k| k.as_string().unwrap())
        .collect();
    assert_eq!(keys, ["type", "requestId", "reason", "errorName"]);
    let json = String::from(js_sys::JSON::stringify(&ev).unwrap());
    assert!(!json.contains("s3cret") && !json.contains("doc"), "{json}");
    ls_remove_prefix(&prefix);
}
