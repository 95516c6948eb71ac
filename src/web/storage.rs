//! `schema()`'s last-good copies: LocalStorage where the host has it, a
//! small in-memory map where it has none (Node, workers), where it refuses
//! access (a `SecurityError` when storage is disabled), or with
//! `storage: false`.
//!
//! A cache is never a source of errors. Every way storage fails (access
//! that throws, `getItem` that throws, corrupt JSON or an entry of the wrong
//! shape or an impossible date, a full quota, a document that cannot be serialized or, for
//! LocalStorage, is over `maxEntryBytes`) becomes "no copy" (or "not stored") plus a [`Fault`],
//! which `schema()` reports as a `'storage'` event.
//!
//! With working LocalStorage there is no second copy in memory, so clearing
//! storage really clears the cache. Only `prefix + cacheKey` (a cacheKey
//! over 2048 characters as its digest) is ever read or written: no
//! iteration, no `clear()`, so entries under another prefix are never
//! touched.
//!
//! An entry is `JSON.stringify({ v: version, t: savedAtEpochMs, data })` in
//! both places. The memory copy is kept serialized too, so every read is a
//! fresh object (a caller who mutates a result cannot change the copy) and
//! its size is measured the same way: the UTF-8 bytes of that JSON text (the
//! key not included). Memory copies belong to their client (its engine):
//! they live as long as it does and no other client sees them.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::JsString;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::convert::{get, Obj};
use super::host::{epoch_ms, global, json_parse};
use crate::policy::key;
use crate::policy::options::StorageConfig;
use crate::text::cat;

#[wasm_bindgen]
extern "C" {
    /// The host's `Storage`, bound with `catch` on each method: each can throw.
    type WebStorage;
    #[wasm_bindgen(method, catch, js_name = getItem)]
    fn get_item(this: &WebStorage, key: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = setItem)]
    fn set_item(this: &WebStorage, key: &str, value: &JsString) -> Result<(), JsValue>;
}

/// Copies kept in memory per client at most; the oldest stored goes first.
const MEMORY_ENTRIES: usize = 32;

/// How far ahead of this clock a copy's date may be (another tab's clock,
/// a small step) before the copy counts as corrupt (README, "Threat model": 60 s).
const FUTURE_SLACK_MS: f64 = 60_000.0;

/// A copy in memory.
struct Held {
    key: String,
    text: JsString,
}

/// One client's last-good copies in memory (Node, `storage: false`, or a
/// host without LocalStorage): owned by the client's engine, so they go
/// with it, and `clear()`ed at its `close()`.
#[derive(Clone, Default)]
pub struct Memory(Rc<RefCell<Vec<Held>>>);

impl Memory {
    pub fn clear(&self) {
        self.0.borrow_mut().clear();
    }
}

/// Why storage gave nothing or took nothing.
pub struct Fault {
    /// `access`, `read`, `corrupt`, `write`, `serialize` or `tooLarge`.
    pub reason: &'static str,
    /// The name of what the host threw (`SecurityError`,
    /// `QuotaExceededError`, `SyntaxError`), when it threw.
    pub error_name: Option<String>,
}

impl Fault {
    fn new(reason: &'static str, thrown: Option<&JsValue>) -> Fault {
        let error_name = thrown.and_then(|e| get(e, "name").ok()?.as_string());
        Fault { reason, error_name }
    }
}

/// A copy found: its data and how old it is.
pub struct Cached {
    pub data: JsValue,
    pub age_ms: f64,
}

enum Slot {
    Local(WebStorage),
    Memory,
}

/// The cache of one client, as its `storage` option configures it.
pub struct Store {
    prefix: String,
    max_bytes: u32,
    /// False with `storage: false`: memory only.
    local: bool,
    memory: Memory,
}

impl Store {
    /// The cache the client's `storage` option (`None`: `storage: false`)
    /// configures, keeping memory copies in the client's `memory`.
    pub fn new(cfg: Option<&StorageConfig>, memory: &Memory) -> Store {
        let d = StorageConfig::default();
        let c = cfg.unwrap_or(&d);
        Store {
            prefix: c.prefix.clone(),
            max_bytes: c.max_entry_bytes,
            local: cfg.is_some(),
            memory: memory.clone(),
        }
    }

    /// Where the copy of `key` is kept: `prefix + cacheKey`, a key longer
    /// than 2048 characters as its digest (`policy::key`), so a megabyte
    /// key costs neither memory nor the origin's storage quota.
    fn full_key(&self, key: &str) -> String {
        cat(&[&self.prefix, &key::bounded(key.to_owned())])
    }

    /// LocalStorage if the host has it and lets us in, else memory.
    fn slot(&self, faults: &mut Vec<Fault>) -> Slot {
        if !self.local {
            return Slot::Memory;
        }
        match get(&global(), "localStorage") {
            Ok(s) if s.is_object() => Slot::Local(s.unchecked_into()),
            Ok(_) => Slot::Memory,
            Err(e) => {
                faults.push(Fault::new("access", Some(&e)));
                Slot::Memory
            }
        }
    }

    /// The copy under `key` saved for `version` (`undefined`: saved without
    /// one) and at most `max_age_ms` old.
    pub fn load(
        &self,
        key: &str,
        version: &JsValue,
        max_age_ms: Option<f64>,
        faults: &mut Vec<Fault>,
    ) -> Option<Cached> {
        let full = self.full_key(key);
        let text = match self.slot(faults) {
            Slot::Local(s) => match s.get_item(&full) {
                Ok(v) => v.dyn_into::<JsString>().ok()?,
                Err(e) => {
                    faults.push(Fault::new("read", Some(&e)));
                    return None;
                }
            },
            Slot::Memory => self
                .memory
                .0
                .borrow()
                .iter()
                .find(|h| h.key == full)
                .map(|h| h.text.clone())?,
        };
        let entry = match json_parse(&text) {
            Ok(v) => v,
            Err(e) => {
                faults.push(Fault::new("corrupt", Some(&e)));
                return None;
            }
        };
        // Reflect.get throws on null and primitives: a wrong shape too. A
        // date this client cannot have written (before 1970, or more than
        // FUTURE_SLACK_MS ahead: a forged entry or a wall clock stepped
        // back) is corrupt too: it would be served as new whatever maxAgeMs.
        let now = epoch_ms();
        let saved = get(&entry, "t").ok().and_then(|t| t.as_f64());
        let Some(saved) = saved.filter(|t| (0.0..=now + FUTURE_SLACK_MS).contains(t)) else {
            faults.push(Fault::new("corrupt", None));
            return None;
        };
        if get(&entry, "v").unwrap_or_default() != *version {
            return None;
        }
        let age_ms = (now - saved).max(0.0);
        if max_age_ms.is_some_and(|max| age_ms > max) {
            return None;
        }
        let data = get(&entry, "data").unwrap_or_default();
        Some(Cached { data, age_ms })
    }

    /// Stores `data` under `key` for `version`, if it fits.
    pub fn save(&self, key: &str, version: &JsValue, data: &JsValue, faults: &mut Vec<Fault>) {
        let entry = Obj::new();
        if !version.is_undefined() {
            entry.set("v", version.clone());
        }
        entry.set("t", epoch_ms()).set("data", data.clone());
        let text = match js_sys::JSON::stringify(&entry.0) {
            Ok(t) => t,
            Err(e) => {
                faults.push(Fault::new("serialize", Some(&e)));
                return;
            }
        };
        let full = self.full_key(key);
        match self.slot(faults) {
            // The size limit guards the origin's LocalStorage quota; memory
            // is bounded by its count of copies.
            Slot::Local(_) if utf8_over(&text, self.max_bytes) => {
                faults.push(Fault::new("tooLarge", None));
            }
            Slot::Local(s) => {
                if let Err(e) = s.set_item(&full, &text) {
                    faults.push(Fault::new("write", Some(&e)));
                }
            }
            Slot::Memory => {
                let mut m = self.memory.0.borrow_mut();
                m.retain(|h| h.key != full);
                if m.len() >= MEMORY_ENTRIES {
                    m.remove(0);
                }
                m.push(Held { key: full, text });
            }
        }
    }
}

/// Whether `text` takes more than `max` bytes in UTF-8. A UTF-16 unit is 1
/// to 3 bytes, so the text is copied out of JS only when that cannot decide.
fn utf8_over(text: &JsString, max: u32) -> bool {
    let units = text.length();
    if units > max {
        return true;
    }
    if units.saturating_mul(3) <= max {
        return false;
    }
    text.as_string()
        .is_none_or(|s| s.len() > usize::try_from(max).unwrap_or(usize::MAX))
}
