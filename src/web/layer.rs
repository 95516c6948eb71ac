//! What one client adds to the engine it shares with the clients derived
//! from it (`client.extend()`): its hooks, its auth and its header
//! functions, and its place in the tree that `close()` ends.
//!
//! Why a layer and not a second engine: protection is per backend, not per
//! module. A derived client shares its parent's breakers, retry budget,
//! concurrency slots, rate-limit holds, cross-tab link and last-good cache
//! (the one `Rc<Engine>`), and differs only here and in its per-call
//! defaults (`request::Builder`). Closing is a tree: a client's `close()`
//! ends its own calls and those of every client derived from it; the root's
//! also closes the engine.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::Function;
use wasm_bindgen::prelude::*;

use super::auth::Auth;
use super::hooks::Hooks;
use super::options::Reader;
use crate::policy::options::OptionsError;

thread_local! {
    static LAST_ID: Cell<u32> = const { Cell::new(0) };
}

/// One client of an engine.
pub struct Layer {
    pub hooks: Hooks,
    /// `auth`: the parent's (and its refreshes) unless this client gave one.
    pub auth: Option<Rc<Auth>>,
    /// `headers` given as functions, the parent's first.
    pub headers: Vec<Function>,
    parent: Option<Rc<Layer>>,
    closed: Cell<bool>,
    /// This client's `on()` listeners, removed when it closes.
    listeners: RefCell<Vec<u32>>,
    /// The package's descriptor-to-class function (set on the root).
    classes: RefCell<Option<Function>>,
    /// Tells this client's calls from another's of the same engine (a
    /// flight is shared within one client only).
    id: u32,
}

/// `headers`, when it is a function.
fn header_fn(r: &Reader) -> Result<Option<Function>, OptionsError> {
    Ok(r.value("headers")?.and_then(|v| v.dyn_into().ok()))
}

impl Layer {
    fn new(
        hooks: Hooks,
        auth: Option<Rc<Auth>>,
        headers: Vec<Function>,
        parent: Option<Rc<Layer>>,
    ) -> Rc<Layer> {
        let id = LAST_ID.with(|n| {
            n.set(n.get().wrapping_add(1));
            n.get()
        });
        Rc::new(Layer {
            hooks,
            auth,
            headers,
            parent,
            closed: Cell::new(false),
            listeners: RefCell::default(),
            classes: RefCell::default(),
            id,
        })
    }

    /// A client made by `createClient(options)`.
    pub fn root(r: &Reader) -> Result<Rc<Layer>, OptionsError> {
        let auth = Auth::read(r)?.map(Rc::new);
        Ok(Layer::new(
            Hooks::read(r)?,
            auth,
            header_fn(r)?.into_iter().collect(),
            None,
        ))
    }

    /// A client derived from this one by `extend(options)`: its hooks
    /// after these, its header function after these, its `auth` instead.
    pub fn child(self: &Rc<Layer>, r: &Reader) -> Result<Rc<Layer>, OptionsError> {
        let auth = match Auth::read(r)? {
            Some(a) => Some(Rc::new(a)),
            None => self.auth.clone(),
        };
        let hooks = self.hooks.then(Hooks::read(r)?);
        let mut headers = self.headers.clone();
        headers.extend(header_fn(r)?);
        Ok(Layer::new(hooks, auth, headers, Some(self.clone())))
    }

    pub fn id(&self) -> u32 {
        self.id
    }

    pub fn is_root(&self) -> bool {
        self.parent.is_none()
    }

    /// This client or one it derives from has been closed.
    pub fn is_closed(&self) -> bool {
        self.closed.get() || self.parent.as_ref().is_some_and(|p| p.is_closed())
    }

    /// This client is `other` or derives from it.
    pub fn within(&self, other: &Layer) -> bool {
        std::ptr::eq(self, other) || self.parent.as_ref().is_some_and(|p| p.within(other))
    }

    /// Marks this client closed; its listeners, to remove.
    pub fn close(&self) -> Vec<u32> {
        self.closed.set(true);
        std::mem::take(&mut *self.listeners.borrow_mut())
    }

    pub fn listening(&self, id: u32) {
        self.listeners.borrow_mut().push(id);
    }

    /// Each attempt needs a `Request` of its own to run these on.
    pub fn per_attempt(&self) -> bool {
        !(self.headers.is_empty()
            && self.auth.is_none()
            && self.hooks.before_request.is_empty()
            && self.hooks.after_response.is_empty())
    }

    /// Its attempts may carry credentials the call's own headers do not
    /// show: a token, or what a header function or hook adds.
    pub fn may_authorize(&self) -> bool {
        self.auth.is_some() || !self.headers.is_empty() || !self.hooks.before_request.is_empty()
    }

    pub fn set_classes(&self, f: Function) {
        *self.classes.borrow_mut() = Some(f);
    }

    /// An error descriptor as the error class the package exports (as a
    /// hook sees it); the descriptor itself without the package's wrapper.
    pub fn classed(&self, descriptor: JsValue) -> JsValue {
        let own = self.classes.borrow().clone();
        match (own, &self.parent) {
            (Some(f), _) => f
                .call1(&JsValue::UNDEFINED, &descriptor)
                .unwrap_or(descriptor),
            (None, Some(p)) => p.classed(descriptor),
            (None, None) => descriptor,
        }
    }
}
