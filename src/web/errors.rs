//! Call failures as plain descriptors. The JS wrapper turns each into an
//! instance of its exported class (`TimeoutError`, `HttpError`, ...), so
//! `instanceof` works and the classes live in one place.

use wasm_bindgen::prelude::*;

use super::convert::Obj;
use crate::policy::classify::RetryDenied;
use crate::policy::guard::Phase;
use crate::policy::options::OptionsError;
use crate::text::{cat, decimal};

pub enum ErrorKind {
    Timeout {
        phase: Phase,
    },
    Abort {
        reason: JsValue,
    },
    /// `offline`: the host reported no network (`navigator.onLine` false).
    Network {
        cause: JsValue,
        offline: bool,
    },
    Http {
        status: u16,
        status_text: String,
        body: JsValue,
        /// The response's content type, from which the JS wrapper parses
        /// `body` into `HttpError.data` (and drops this field).
        content_type: JsValue,
    },
    CircuitOpen {
        key: String,
        retry_in_ms: f64,
    },
    QueueFull,
    Parse {
        cause: JsValue,
    },
    /// A value that `validate` rejected (a `ParseError`): what it threw,
    /// and a Standard Schema's issues (both may be undefined).
    Invalid {
        cause: JsValue,
        issues: JsValue,
    },
    Options(OptionsError),
    /// A hook, a header function or the auth token failed: the error the
    /// client's JS side made of it (an OptionsError naming `hooks`,
    /// `headers` or `auth`, `cause` what the function threw), stamped and
    /// passed on as it is.
    Thrown(JsValue),
}

pub struct CallError {
    pub kind: ErrorKind,
    pub retry_denied: Option<RetryDenied>,
    pub request_id: String,
    pub attempts: u32,
    pub elapsed_ms: f64,
    /// A `cause` besides the kind's own (a 401's failed refresh).
    cause: Option<JsValue>,
    /// Which call failed, as its message ends: `GET https://host/path?q=…`
    /// (`policy::href::described`: no query values, no userinfo).
    about: String,
}

impl CallError {
    /// The error of an attempt that was not retried, and why not.
    pub fn denied(mut self, why: RetryDenied) -> CallError {
        self.retry_denied = Some(why);
        self
    }

    /// The error with `cause` (what made it final: a refresh that threw).
    pub fn with_cause(mut self, cause: JsValue) -> CallError {
        self.cause = Some(cause);
        self
    }

    /// The error of the call `about` describes (`policy::href::described`).
    pub fn about(mut self, about: String) -> CallError {
        self.about = about;
        self
    }

    /// The error as its caller sees it: whose call, after how many
    /// attempts and how long.
    pub fn stamped(mut self, request_id: &str, attempts: u32, elapsed_ms: f64) -> CallError {
        self.request_id = request_id.to_owned();
        self.attempts = attempts;
        self.elapsed_ms = elapsed_ms.max(0.0);
        self
    }

    pub fn new(kind: ErrorKind) -> CallError {
        CallError {
            kind,
            retry_denied: None,
            request_id: String::new(),
            attempts: 0,
            elapsed_ms: 0.0,
            cause: None,
            about: String::new(),
        }
    }

    /// The HTTP status, for an `HttpError`.
    pub fn status(&self) -> Option<u16> {
        match self.kind {
            ErrorKind::Http { status, .. } => Some(status),
            _ => None,
        }
    }

    pub fn name(&self) -> &'static str {
        match self.kind {
            ErrorKind::Timeout { .. } => "TimeoutError",
            ErrorKind::Abort { .. } => "AbortError",
            ErrorKind::Network { .. } => "NetworkError",
            ErrorKind::Http { .. } => "HttpError",
            ErrorKind::CircuitOpen { .. } => "CircuitOpenError",
            ErrorKind::QueueFull => "QueueFullError",
            ErrorKind::Parse { .. } | ErrorKind::Invalid { .. } => "ParseError",
            ErrorKind::Options(_) | ErrorKind::Thrown(_) => "OptionsError",
        }
    }

    /// What happened, then which call it happened to.
    fn message(&self) -> String {
        let what = self.what();
        match &self.kind {
            ErrorKind::Options(_) | ErrorKind::Thrown(_) => what,
            _ if self.about.is_empty() => what,
            _ => cat(&[&what, ": ", &self.about]),
        }
    }

    fn what(&self) -> String {
        match &self.kind {
            ErrorKind::Timeout { phase } => match phase {
                Phase::Queue => "deadline passed while waiting for a concurrency slot".into(),
                Phase::Deadline => "call deadline exceeded".into(),
                Phase::Attempt => "attempt timed out".into(),
            },
            ErrorKind::Abort { .. } => "call aborted".into(),
            ErrorKind::Network { offline: true, .. } => "offline: no network".into(),
            ErrorKind::Network { .. } => "network error".into(),
            ErrorKind::Http {
                status,
                status_text,
                ..
            } => cat(&["HTTP ", &decimal(u64::from(*status)), " ", status_text])
                .trim_end()
                .to_owned(),
            ErrorKind::CircuitOpen { key, .. } => cat(&["circuit open for ", key]),
            ErrorKind::QueueFull => "concurrency queue is full".into(),
            ErrorKind::Parse { .. } => "response body could not be parsed".into(),
            ErrorKind::Invalid { .. } => "response rejected by validate()".into(),
            ErrorKind::Options(e) => cat(&["invalid option ", &e.option, ": ", &e.reason]),
            ErrorKind::Thrown(_) => String::new(),
        }
    }

    /// The descriptor the JS wrapper turns into an error instance.
    pub fn to_js(&self) -> JsValue {
        let o = match &self.kind {
            // An error object already: only stamped.
            ErrorKind::Thrown(e) if e.is_object() => Obj(e.clone().into()),
            _ => {
                let o = Obj::new();
                o.set("name", self.name()).set("message", self.message());
                o
            }
        };
        o.set("requestId", self.request_id.as_str())
            .set("attempts", self.attempts)
            .set("elapsedMs", self.elapsed_ms);
        if let Some(d) = self.retry_denied {
            o.set("retryDenied", d.as_str());
        }
        match &self.kind {
            ErrorKind::Timeout { phase } => {
                o.set("phase", phase.as_str());
            }
            ErrorKind::Abort { reason } => {
                o.set("reason", reason.clone());
            }
            ErrorKind::Network { cause, offline } => {
                o.set("cause", cause.clone());
                if *offline {
                    o.set("offline", true);
                }
            }
            ErrorKind::Parse { cause } => {
                o.set("cause", cause.clone());
            }
            ErrorKind::Invalid { cause, issues } => {
                o.set("cause", cause.clone());
                if !issues.is_undefined() {
                    o.set("issues", issues.clone());
                }
            }
            ErrorKind::Http {
                status,
                status_text,
                body,
                content_type,
            } => {
                o.set("status", *status)
                    .set("statusText", status_text.as_str())
                    .set("body", body.clone());
                if content_type.is_string() {
                    o.set("contentType", content_type.clone());
                }
            }
            ErrorKind::CircuitOpen { key, retry_in_ms } => {
                o.set("key", key.as_str()).set("retryInMs", *retry_in_ms);
            }
            ErrorKind::QueueFull => {}
            ErrorKind::Options(e) => {
                o.set("option", e.option.as_str());
            }
            ErrorKind::Thrown(_) => {}
        }
        if let Some(cause) = &self.cause {
            o.set("cause", cause.clone());
        }
        o.into_js()
    }
}

impl From<OptionsError> for CallError {
    fn from(e: OptionsError) -> CallError {
        CallError::new(ErrorKind::Options(e))
    }
}
