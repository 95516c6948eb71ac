//! Reading option objects from JS into the policy core's raw structs.
//!
//! The policy options are read by their tables (`policy::options::CLIENT`,
//! `CALL`): [`Reader::members`] walks one and reads each member by its
//! kind. Only types are checked here (a key of the wrong type is an
//! `OptionsError` naming it); ranges and defaults are the policy core's
//! (`option_table::check`, `ClientConfig::from_members`), where native
//! tests prove them. A getter that throws is reported as invalid, never
//! propagated as a panic.

use std::cell::RefCell;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::convert::get;
use super::host::{array_from, entries, instance_of, Class};
use crate::policy::call_options::{RawIdemKey, Scalar};
use crate::policy::option_table::{dotted as join, Given, Kind, Opt};
use crate::policy::options::{OptionsError, CALL, CLIENT};

/// A reader over one options object; `prefix` makes dotted option names.
pub struct Reader<'a> {
    /// The object, or None for `undefined`/`null` (every key absent).
    obj: Option<&'a JsValue>,
    prefix: &'a str,
    /// `retry.retryOn`, kept aside when `retry` is read (a function: no
    /// member of the core's tables).
    retry_on: RefCell<Option<JsValue>>,
}

/// An object or a function: what a WebIDL dictionary may be read from.
pub fn is_dictionary(v: &JsValue) -> bool {
    v.is_object() || v.is_function()
}

impl<'a> Reader<'a> {
    /// `undefined`/`null` read as an empty object; anything but an object
    /// (a function too) is invalid.
    pub fn new(obj: &'a JsValue, name: &'a str) -> Result<Reader<'a>, OptionsError> {
        if obj.is_function() {
            return Err(OptionsError::new(name, "must be an object"));
        }
        Reader::dictionary(obj, name)
    }

    /// As WebIDL reads a dictionary (fetch()'s `init`): a function is an
    /// object with members too.
    pub fn dictionary(obj: &'a JsValue, name: &'a str) -> Result<Reader<'a>, OptionsError> {
        let obj = if obj.is_undefined() || obj.is_null() {
            None
        } else if is_dictionary(obj) {
            Some(obj)
        } else {
            return Err(OptionsError::new(name, "must be an object"));
        };
        // request()'s options and fetch()'s init name their keys alike:
        // `timeoutMs`, `retry.maxAttempts`, as the range checks do.
        Ok(Reader {
            obj,
            prefix: "",
            retry_on: RefCell::default(),
        })
    }

    /// `retry.retryOn` as read with `retry` (after the table's members).
    pub fn retry_on(&self) -> Option<JsValue> {
        self.retry_on.take()
    }

    /// The raw value, `None` when absent (`undefined`).
    pub fn value(&self, k: &'static str) -> Result<Option<JsValue>, OptionsError> {
        let Some(obj) = self.obj else {
            return Ok(None);
        };
        match get(obj, k) {
            Ok(v) if v.is_undefined() => Ok(None),
            Ok(v) => Ok(Some(v)),
            Err(_) => Err(OptionsError::new(
                &join(self.prefix, k),
                "could not be read",
            )),
        }
    }

    pub fn num(&self, k: &'static str) -> Result<Option<f64>, OptionsError> {
        match self.value(k)? {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| OptionsError::new(&join(self.prefix, k), "must be a number")),
        }
    }

    pub fn bool(&self, k: &'static str) -> Result<Option<bool>, OptionsError> {
        match self.value(k)? {
            None => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| OptionsError::new(&join(self.prefix, k), "must be a boolean")),
        }
    }

    pub fn string(&self, k: &'static str) -> Result<Option<String>, OptionsError> {
        match self.value(k)? {
            None => Ok(None),
            Some(v) => v
                .as_string()
                .map(Some)
                .ok_or_else(|| OptionsError::new(&join(self.prefix, k), "must be a string")),
        }
    }

    /// The members `table` names, each read by its kind.
    pub fn members(&self, table: &[Opt]) -> Result<Vec<Given>, OptionsError> {
        table.iter().map(|opt| self.given(opt)).collect()
    }

    /// The member `opt` names, read by its kind; of another type, the
    /// kind's `expects()`.
    fn given(&self, opt: &Opt) -> Result<Given, OptionsError> {
        let k = opt.key;
        let Some(v) = self.value(k)? else {
            return Ok(Given::Absent);
        };
        let fails = |reason| OptionsError::new(&join(self.prefix, k), reason);
        let off = v.as_bool() == Some(false);
        let given = match opt.kind {
            Kind::Num => v.as_f64().map(Given::Num),
            Kind::NumOrOff if off => Some(Given::Off),
            Kind::NumOrOff => v.as_f64().map(Given::Num),
            Kind::Bool => v.as_bool().map(Given::Bool),
            Kind::Text => v.as_string().map(Given::Text),
            Kind::MsOrP95 => match v.as_string() {
                Some(p) if p == "p95" => Some(Given::Text(p)),
                _ => v.as_f64().map(Given::Num),
            },
            Kind::Nums | Kind::Texts if js_sys::Array::is_array(&v) => {
                let list = array_from(&v).map_err(|_| fails("could not be read"))?;
                let wrong = || fails(opt.kind.each());
                Some(if matches!(opt.kind, Kind::Texts) {
                    let texts = list.iter().map(|x| x.as_string()).collect::<Option<_>>();
                    Given::Texts(texts.ok_or_else(wrong)?)
                } else {
                    let nums = list.iter().map(|x| x.as_f64()).collect::<Option<_>>();
                    Given::Nums(nums.ok_or_else(wrong)?)
                })
            }
            Kind::Group(_) if off => Some(Given::Off),
            Kind::Group(table) if v.is_object() && !v.is_function() => {
                let name = join(self.prefix, k);
                let sub = Reader {
                    obj: Some(&v),
                    prefix: &name,
                    retry_on: RefCell::default(),
                };
                let members = sub.members(table)?;
                if k == "retry" {
                    let f = sub.value("retryOn")?;
                    if f.as_ref().is_some_and(|f| !f.is_function()) {
                        return Err(OptionsError::at(&name, "retryOn", "must be a function"));
                    }
                    self.retry_on.replace(f);
                }
                Some(Given::Group(members))
            }
            _ => None,
        };
        given.ok_or_else(|| fails(opt.kind.expects()))
    }

    /// A `Record<string, string | undefined>` (headers; query values are
    /// read elsewhere); an undefined value is `None` (as ky and axios skip it).
    pub fn string_record(
        &self,
        k: &'static str,
    ) -> Result<Vec<(String, Option<String>)>, OptionsError> {
        match self.value(k)? {
            Some(v) => self.record(k, &v),
            None => Ok(Vec::new()),
        }
    }

    /// The member `k`'s value `v` (read already) as a record (see
    /// [`Reader::string_record`]).
    pub fn record(
        &self,
        k: &'static str,
        v: &JsValue,
    ) -> Result<Vec<(String, Option<String>)>, OptionsError> {
        if !v.is_object() || v.is_function() {
            return Err(OptionsError::new(
                &join(self.prefix, k),
                "must be an object of strings",
            ));
        }
        let entries =
            pairs(v).map_err(|_| OptionsError::new(&join(self.prefix, k), "could not be read"))?;
        let mut out = Vec::with_capacity(entries.length() as usize);
        for pair in entries.iter() {
            match pair_of(&pair).map(|(n, v)| (n.as_string(), v)) {
                Some((Some(name), v)) if v.is_undefined() => out.push((name, None)),
                Some((Some(name), v)) if v.is_string() => out.push((name, v.as_string())),
                _ => {
                    return Err(OptionsError::new(
                        &join(self.prefix, k),
                        "values must be strings",
                    ))
                }
            }
        }
        Ok(out)
    }
}

/// A record's `[name, value]` pairs: a plain object's own entries, or what
/// an iterable of pairs yields (`Headers`, `Map`, `URLSearchParams`, an
/// array of pairs), so none of those is silently read as empty.
pub fn pairs(v: &JsValue) -> Result<js_sys::Array, JsValue> {
    let iterable = js_sys::Reflect::get(v, &js_sys::Symbol::iterator())?.is_function();
    if iterable {
        array_from(v)
    } else {
        entries(v)
    }
}

/// One `[name, value]` pair, if `pair` is one.
pub fn pair_of(pair: &JsValue) -> Option<(JsValue, JsValue)> {
    let pair: &js_sys::Array = pair.dyn_ref()?;
    (pair.length() == 2).then(|| (pair.get(0), pair.get(1)))
}

/// A client's options' members (`CLIENT`).
pub fn read_client(r: &Reader) -> Result<Vec<Given>, OptionsError> {
    r.members(&CLIENT)
}

/// A call's policy options' members (`CALL`).
pub fn read_call(r: &Reader) -> Result<Vec<Given>, OptionsError> {
    r.members(&CALL)
}

/// The caller's signal, if any; anything else under `signal` is invalid.
pub fn read_signal(r: &Reader) -> Result<Option<web_sys::AbortSignal>, OptionsError> {
    match r.value("signal")? {
        None => Ok(None),
        Some(v) if v.is_null() => Ok(None),
        // A Proxy of a signal passes `instanceof` but throws on every read:
        // it must read as a signal, or it could never be listened to.
        Some(v)
            if instance_of(&v, Class::AbortSignal)
                && get(&v, "aborted").is_ok_and(|a| a.as_bool().is_some()) =>
        {
            Ok(Some(v.unchecked_into()))
        }
        Some(_) => Err(OptionsError::new("signal", "must be an AbortSignal")),
    }
}

/// `idempotencyKey` as given, `true`/`false` or a string; the rules on it
/// are the core's (`call_options::idempotency_key`).
pub fn read_idempotency_key(r: &Reader) -> Result<Option<RawIdemKey>, OptionsError> {
    match r.value("idempotencyKey")? {
        None => Ok(None),
        Some(v) => match (v.as_bool(), v.as_string()) {
            (Some(b), _) => Ok(Some(RawIdemKey::Flag(b))),
            (None, Some(s)) => Ok(Some(RawIdemKey::Text(s))),
            (None, None) => Err(OptionsError::new(
                "idempotencyKey",
                "must be a string or true",
            )),
        },
    }
}

/// A value's kind as the core's rules on it see it.
pub fn scalar(v: &JsValue) -> Scalar {
    if v.is_string() {
        Scalar::Text
    } else if let Some(n) = v.as_f64() {
        Scalar::Number(n)
    } else if v.as_bool().is_some() {
        Scalar::Bool
    } else {
        Scalar::Other
    }
}
