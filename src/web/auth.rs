//! `auth: { token, scheme, refresh }`: a token read before every attempt,
//! and one refresh shared by every call that meets a 401 meanwhile.
//!
//! Why one refresh: when a token expires, every call in flight gets a 401
//! at once; a refresh each would hit the identity server N times and race
//! to store N tokens. Here the first 401 starts `refresh()`, the others
//! (of this client and of the clients derived from it, which share this
//! `Auth`) wait for it, and a 401 to an attempt whose token was read
//! before the last refresh finished is replayed at once with the token
//! read again. Whether a 401 may be replayed at all (once per call, within
//! its deadline, no retry and no breaker sample) is the policy core's
//! (`Guard::replay`); this only reads tokens and runs the refresh.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Array, Function};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::errors::CallError;
use super::hooks::{call, failed};
use super::host::to_promise;
use super::options::Reader;
use super::runtime::{settle, spawn};
use crate::policy::options::OptionsError;
use crate::text::cat;

/// The refreshes of one `auth`.
#[derive(Default)]
struct Refresh {
    /// Refreshes finished well so far: a token read when this was `n` is
    /// older than every refresh after the n-th.
    done: u64,
    /// The refresh in progress, which later 401s wait for.
    running: Option<js_sys::Promise>,
}

/// A client's `auth`, shared with the clients derived from it.
pub struct Auth {
    token: Function,
    scheme: String,
    refresh: Option<Function>,
    state: Rc<RefCell<Refresh>>,
}

/// What an attempt carries: its `Authorization` value, and the refreshes
/// finished when its token was read.
pub struct Token {
    pub header: Option<String>,
    pub seen: u64,
}

fn function(v: JsValue, option: &str) -> Result<Function, OptionsError> {
    v.dyn_into()
        .map_err(|_| OptionsError::new(option, "must be a function"))
}

impl Auth {
    /// `auth` of an options object, if given.
    pub fn read(r: &Reader) -> Result<Option<Auth>, OptionsError> {
        let Some(v) = r.value("auth")? else {
            return Ok(None);
        };
        if !v.is_object() || v.is_function() {
            return Err(OptionsError::new("auth", "must be an object"));
        }
        let r = Reader::new(&v, "auth")?;
        let field = |k: &str| {
            r.value(k)
                .map_err(|_| OptionsError::new(&cat(&["auth.", k]), "could not be read"))
        };
        let token = match field("token")? {
            Some(f) => function(f, "auth.token")?,
            None => return Err(OptionsError::new("auth.token", "is required (a function)")),
        };
        let refresh = field("refresh")?
            .map(|f| function(f, "auth.refresh"))
            .transpose()?;
        let scheme = match field("scheme")? {
            None => "Bearer".to_owned(),
            Some(s) => s
                .as_string()
                .filter(|s| s.bytes().all(|b| b.is_ascii_graphic()))
                .ok_or_else(|| {
                    OptionsError::new("auth.scheme", "must be a string without spaces")
                })?,
        };
        Ok(Some(Auth {
            token,
            scheme,
            refresh,
            state: Rc::default(),
        }))
    }

    pub fn can_refresh(&self) -> bool {
        self.refresh.is_some()
    }

    /// Reads the token: `Authorization: <scheme> <token>` (the token alone
    /// with an empty scheme), or nothing for `null`/`undefined`. A token
    /// that throws, rejects or is no string fails the call
    /// (`OptionsError('auth')`).
    pub async fn token(&self) -> Result<Token, CallError> {
        let seen = self.state.borrow().done;
        let v = call(&self.token, &Array::new())
            .await
            .map_err(|e| failed("auth", "auth.token() threw or rejected", e))?;
        if v.is_undefined() || v.is_null() {
            return Ok(Token { header: None, seen });
        }
        let Some(token) = v.as_string() else {
            return Err(failed(
                "auth",
                "auth.token() must give a string, null or undefined",
                JsValue::UNDEFINED,
            ));
        };
        let header = if self.scheme.is_empty() {
            token
        } else {
            cat(&[&self.scheme, " ", &token])
        };
        Ok(Token {
            header: Some(header),
            seen,
        })
    }

    /// After a 401 to an attempt whose token was read when `seen`
    /// refreshes had finished: at once if one has finished since, else
    /// when the refresh in progress (or one started now) has. `Err` with
    /// what the refresh threw or rejected with.
    pub async fn refreshed(&self, seen: u64) -> Result<(), JsValue> {
        let running = {
            let st = self.state.borrow();
            if st.done > seen {
                return Ok(());
            }
            st.running.clone()
        };
        let p = match running {
            Some(p) => p,
            None => self.start()?,
        };
        let out = settle(p.clone()).await;
        finish(&self.state, &p, out.is_ok());
        out.map(|_| ())
    }

    /// Starts the refresh the next 401s wait for. It is finished (`done`
    /// counted, `running` cleared) even if every call waiting for it has
    /// gone.
    fn start(&self) -> Result<js_sys::Promise, JsValue> {
        let Some(f) = &self.refresh else {
            return Err(JsValue::UNDEFINED);
        };
        let p = to_promise(&f.call0(&JsValue::UNDEFINED)?);
        self.state.borrow_mut().running = Some(p.clone());
        let (state, done) = (self.state.clone(), settle(p.clone()));
        let watched = p.clone();
        spawn(async move {
            let ok = done.await.is_ok();
            finish(&state, &watched, ok);
        });
        Ok(p)
    }
}

/// The refresh `p` ended: counted once (by whichever of its watchers sees
/// it first), if it went well.
fn finish(state: &RefCell<Refresh>, p: &js_sys::Promise, ok: bool) {
    let mut st = state.borrow_mut();
    let same = |r: &js_sys::Promise| AsRef::<JsValue>::as_ref(r) == AsRef::<JsValue>::as_ref(p);
    if st.running.as_ref().is_some_and(same) {
        st.running = None;
        if ok {
            st.done += 1;
        }
    }
}
