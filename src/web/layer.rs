//! What one client adds to the engine it shares with the clients derived
//! from it (`client.extend()`): its hooks, auth and header functions (an
//! [`UserFns`]) and its place in the tree that `close()` ends.
//!
//! Why a layer and not a second engine: protection is per backend, not per
//! module. A derived client shares its parent's breakers, retry budget,
//! concurrency slots, rate-limit holds, cross-tab link and last-good cache
//! (the one `Rc<Engine>`), and differs only here and in its per-call
//! defaults (`request::Builder`). Closing is a tree: a client's `close()`
//! ends its own calls and those of every client derived from it; the root's
//! also closes the engine.

use std::cell::{Cell, OnceCell, RefCell};
use std::rc::Rc;

use super::hooks::{flag, UserFns};
use super::transport::Transport;

thread_local! {
    static LAST_ID: Cell<u32> = const { Cell::new(0) };
}

/// One client of an engine.
pub struct Layer {
    parent: Option<Rc<Layer>>,
    /// Its functions and their flags, set once (none: a client without).
    fns: OnceCell<(UserFns, u32)>,
    /// A derived client's own `fetch` option (else its parent's, and the
    /// root's is the engine's).
    transport: Option<Transport>,
    closed: Cell<bool>,
    /// This client's `on()` listeners, removed when it closes.
    listeners: RefCell<Vec<u32>>,
    /// Tells this client's calls from another's of the same engine (a
    /// flight is shared within one client only).
    id: u32,
}

impl Layer {
    /// A client made by `createClient`, or derived from `parent` (with a
    /// `fetch` of its own, `transport`).
    pub fn new(parent: Option<Rc<Layer>>, transport: Option<Transport>) -> Rc<Layer> {
        let id = LAST_ID.with(|n| {
            n.set(n.get().wrapping_add(1));
            n.get()
        });
        Rc::new(Layer {
            parent,
            fns: OnceCell::new(),
            transport,
            closed: Cell::new(false),
            listeners: RefCell::default(),
            id,
        })
    }

    /// The client's functions (the wrapper sets them before any call).
    pub fn set_user_fns(&self, fns: UserFns) {
        let flags = fns.flags();
        let _ = self.fns.set((fns, flags));
    }

    /// Its `UserFns`, if it asks for `bit` (a [`flag`]).
    pub fn fns(&self, bit: u32) -> Option<&UserFns> {
        self.fns
            .get()
            .filter(|(_, flags)| flags & bit != 0)
            .map(|(fns, _)| fns)
    }

    /// Its `UserFns` whatever its flags (the wrapper sets one on every client):
    /// a call's `retry.retryOn` is called through it.
    pub fn any_fns(&self) -> Option<&UserFns> {
        self.fns.get().map(|(fns, _)| fns)
    }

    /// Its attempts may carry credentials the call's own headers do not
    /// show: a token, or what a header function or hook adds.
    pub fn may_authorize(&self) -> bool {
        self.fns(flag::MAY_AUTHORIZE).is_some()
    }

    /// Where its attempts go, if not the engine's transport.
    pub fn transport(&self) -> Option<&Transport> {
        self.transport
            .as_ref()
            .or_else(|| self.parent.as_ref()?.transport())
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

    /// A listener removed by `off()`: nothing to remove at close.
    pub fn unlisten(&self, id: u32) {
        self.listeners.borrow_mut().retain(|&l| l != id);
    }
}
