//! Reading option objects from JS into the policy core's raw structs.
//!
//! Only types are checked here (a key of the wrong type is an
//! `OptionsError` naming it); ranges and defaults are the policy core's
//! (`ClientConfig::from_raw`), where native tests prove them. A getter that
//! throws is reported as invalid, never propagated as a panic.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::convert::get;
use super::host::{array_from, entries, instance_of};
use crate::policy::call_options::{RawIdemKey, Scalar};
use crate::policy::options::{
    OptionsError, RawBreaker, RawBudget, RawCallOptions, RawClientOptions, RawConcurrency,
    RawHedge, RawRetry, RawStorage, Toggle,
};
use crate::text::cat;

fn join(prefix: &str, k: &str) -> String {
    if prefix.is_empty() {
        k.to_string()
    } else {
        cat(&[prefix, ".", k])
    }
}

/// A reader over one options object; `prefix` makes dotted option names.
pub struct Reader<'a> {
    /// The object, or None for `undefined`/`null` (every key absent).
    obj: Option<&'a JsValue>,
    prefix: &'a str,
}

impl<'a> Reader<'a> {
    /// `undefined`/`null` read as an empty object; anything but an object is invalid.
    pub fn new(obj: &'a JsValue, name: &'a str) -> Result<Reader<'a>, OptionsError> {
        let obj = if obj.is_undefined() || obj.is_null() {
            None
        } else if obj.is_object() && !obj.is_function() {
            Some(obj)
        } else {
            return Err(OptionsError::new(name, "must be an object"));
        };
        // request()'s options and fetch()'s init name their keys alike:
        // `timeoutMs`, `retry.maxAttempts`, as the range checks do.
        Ok(Reader { obj, prefix: "" })
    }

    /// The raw value, `None` when absent (`undefined`).
    pub fn value(&self, k: &str) -> Result<Option<JsValue>, OptionsError> {
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

    pub fn num(&self, k: &str) -> Result<Option<f64>, OptionsError> {
        match self.value(k)? {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| OptionsError::new(&join(self.prefix, k), "must be a number")),
        }
    }

    /// `number | false`: absent is the default, `false` turns it off.
    pub fn num_or_off(&self, k: &str) -> Result<Toggle<f64>, OptionsError> {
        match self.value(k)? {
            None => Ok(Toggle::Default),
            Some(v) if v.as_bool() == Some(false) => Ok(Toggle::Off),
            Some(v) => v.as_f64().map(Toggle::On).ok_or_else(|| {
                OptionsError::new(&join(self.prefix, k), "must be a number or false")
            }),
        }
    }

    pub fn bool(&self, k: &str) -> Result<Option<bool>, OptionsError> {
        match self.value(k)? {
            None => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| OptionsError::new(&join(self.prefix, k), "must be a boolean")),
        }
    }

    pub fn string(&self, k: &str) -> Result<Option<String>, OptionsError> {
        match self.value(k)? {
            None => Ok(None),
            Some(v) => v
                .as_string()
                .map(Some)
                .ok_or_else(|| OptionsError::new(&join(self.prefix, k), "must be a string")),
        }
    }

    fn array(&self, k: &str) -> Result<Option<js_sys::Array>, OptionsError> {
        match self.value(k)? {
            None => Ok(None),
            Some(v) if js_sys::Array::is_array(&v) => array_from(&v)
                .map(Some)
                .map_err(|_| OptionsError::new(&join(self.prefix, k), "could not be read")),
            Some(_) => Err(OptionsError::new(&join(self.prefix, k), "must be an array")),
        }
    }

    pub fn numbers(&self, k: &str) -> Result<Option<Vec<f64>>, OptionsError> {
        let Some(arr) = self.array(k)? else {
            return Ok(None);
        };
        arr.iter()
            .map(|v| {
                v.as_f64().ok_or_else(|| {
                    OptionsError::new(&join(self.prefix, k), "must hold numbers only")
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    pub fn strings(&self, k: &str) -> Result<Option<Vec<String>>, OptionsError> {
        let Some(arr) = self.array(k)? else {
            return Ok(None);
        };
        arr.iter()
            .map(|v| {
                v.as_string().ok_or_else(|| {
                    OptionsError::new(&join(self.prefix, k), "must hold strings only")
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// A `false | object` sub-option, read by `read`.
    pub fn toggle<T>(
        &self,
        k: &str,
        read: impl FnOnce(&Reader) -> Result<T, OptionsError>,
    ) -> Result<Toggle<T>, OptionsError> {
        match self.value(k)? {
            None => Ok(Toggle::Default),
            Some(v) if v.as_bool() == Some(false) => Ok(Toggle::Off),
            Some(v) if v.is_object() && !v.is_function() => {
                let name = join(self.prefix, k);
                let sub = Reader {
                    obj: Some(&v),
                    prefix: &name,
                };
                read(&sub).map(Toggle::On)
            }
            Some(_) => Err(OptionsError::new(
                &join(self.prefix, k),
                "must be false or an object",
            )),
        }
    }

    /// A `Record<string, string | undefined>` (headers; query values are
    /// read elsewhere); an undefined value is `None` (as ky and axios skip it).
    pub fn string_record(&self, k: &str) -> Result<Vec<(String, Option<String>)>, OptionsError> {
        let Some(v) = self.value(k)? else {
            return Ok(Vec::new());
        };
        if !v.is_object() || v.is_function() {
            return Err(OptionsError::new(
                &join(self.prefix, k),
                "must be an object of strings",
            ));
        }
        let entries =
            pairs(&v).map_err(|_| OptionsError::new(&join(self.prefix, k), "could not be read"))?;
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

fn read_retry(r: &Reader) -> Result<RawRetry, OptionsError> {
    Ok(RawRetry {
        max_attempts: r.num("maxAttempts")?,
        base_delay_ms: r.num("baseDelayMs")?,
        max_delay_ms: r.num("maxDelayMs")?,
        jitter: r.string("jitter")?,
        statuses: r.numbers("statuses")?,
        methods: r.strings("methods")?,
        retry_after: r.bool("retryAfter")?,
        max_retry_after_ms: r.num("maxRetryAfterMs")?,
    })
}

pub fn read_client(r: &Reader) -> Result<RawClientOptions, OptionsError> {
    Ok(RawClientOptions {
        timeout_ms: r.num("timeoutMs")?,
        gateway_timeout_ms: r.num("gatewayTimeoutMs")?,
        deadline_ms: r.num("deadlineMs")?,
        retry: r.toggle("retry", read_retry)?,
        budget: r.toggle("budget", |r| {
            Ok(RawBudget {
                ratio: r.num("ratio")?,
                min_retries: r.num("minRetries")?,
                window_ms: r.num("windowMs")?,
            })
        })?,
        breaker: r.toggle("breaker", |r| {
            Ok(RawBreaker {
                window_ms: r.num("windowMs")?,
                min_samples: r.num("minSamples")?,
                failure_rate: r.num("failureRate")?,
                consecutive_failures: r.num_or_off("consecutiveFailures")?,
                open_ms: r.num("openMs")?,
                max_open_ms: r.num("maxOpenMs")?,
                half_open_probes: r.num("halfOpenProbes")?,
                mode: r.string("mode")?,
                k: r.num("k")?,
            })
        })?,
        concurrency: r.toggle("concurrency", |r| {
            Ok(RawConcurrency {
                max: r.num("max")?,
                queue: r.num("queue")?,
            })
        })?,
        dedupe: r.bool("dedupe")?,
        wait_for_online: r.bool("waitForOnline")?,
        cross_tab: r.bool("crossTab")?,
        hedge: r.toggle("hedge", read_hedge)?,
        rate_limit: r.bool("rateLimit")?,
        storage: r.toggle("storage", |r| {
            Ok(RawStorage {
                prefix: r.string("prefix")?,
                max_entry_bytes: r.num("maxEntryBytes")?,
            })
        })?,
    })
}

pub fn read_call(r: &Reader) -> Result<RawCallOptions, OptionsError> {
    Ok(RawCallOptions {
        timeout_ms: r.num("timeoutMs")?,
        deadline_ms: r.num("deadlineMs")?,
        retry: r.toggle("retry", read_retry)?,
        wait_for_online: r.bool("waitForOnline")?,
        hedge: r.toggle("hedge", read_hedge)?,
        rate_limit: r.bool("rateLimit")?,
    })
}

/// `hedge: { afterMs: number | 'p95', max?: number }`.
fn read_hedge(r: &Reader) -> Result<RawHedge, OptionsError> {
    let (after_ms, after_p95) = match r.value("afterMs")? {
        None => (None, false),
        Some(v) if v.as_string().as_deref() == Some("p95") => (None, true),
        Some(v) => match v.as_f64() {
            Some(ms) => (Some(ms), false),
            None => {
                return Err(OptionsError::new(
                    "hedge.afterMs",
                    "must be a number or 'p95'",
                ))
            }
        },
    };
    Ok(RawHedge {
        after_ms,
        after_p95,
        max: r.num("max")?,
    })
}

/// The caller's signal, if any; anything else under `signal` is invalid.
pub fn read_signal(r: &Reader) -> Result<Option<web_sys::AbortSignal>, OptionsError> {
    match r.value("signal")? {
        None => Ok(None),
        Some(v) if v.is_null() => Ok(None),
        // A Proxy of a signal passes `instanceof` but throws on every read:
        // it must read as a signal, or it could never be listened to.
        Some(v)
            if instance_of::<web_sys::AbortSignal>(&v)
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
