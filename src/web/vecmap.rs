//! A map kept as a `Vec` sorted by key, for the engine's small maps.
//!
//! Why not `HashMap` or `BTreeMap`: each brings its own table or tree code
//! (and SipHash) into the wasm, several KB gzipped, for maps that hold a
//! handful of entries: queued calls, calls in flight, shared flights. A
//! sorted Vec is a binary search and a `memmove`.

use std::borrow::Borrow;

pub struct VecMap<K, V>(Vec<(K, V)>);

impl<K: Ord, V> VecMap<K, V> {
    pub fn new() -> Self {
        VecMap(Vec::new())
    }

    fn find<Q: Ord + ?Sized>(&self, k: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
    {
        self.0.binary_search_by(|(x, _)| x.borrow().cmp(k))
    }

    pub fn get<Q: Ord + ?Sized>(&self, k: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        let i = self.find(k).ok()?;
        self.0.get(i).map(|(_, v)| v)
    }

    /// Inserts or replaces.
    pub fn insert(&mut self, k: K, v: V) {
        match self.find(&k) {
            Ok(i) => {
                if let Some(slot) = self.0.get_mut(i) {
                    slot.1 = v;
                }
            }
            Err(i) => self.0.insert(i, (k, v)),
        }
    }

    pub fn remove<Q: Ord + ?Sized>(&mut self, k: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        let i = self.find(k).ok()?;
        Some(self.0.remove(i).1)
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.0.iter().map(|(_, v)| v)
    }

    /// Empties the map, returning its values in key order.
    pub fn take_values(&mut self) -> Vec<V> {
        std::mem::take(&mut self.0)
            .into_iter()
            .map(|(_, v)| v)
            .collect()
    }
}
