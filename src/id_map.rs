//! A map from ids to large values, stored densely.
//!
//! A `std` hash map keeps its entries inline in a table of a power-of-two
//! size that it fills to at most 7/8 and then doubles, so right after doubling
//! the table is under half full, and every empty slot costs a whole entry. For
//! the ledger's page states (160 bytes an entry) that was 675 MB of table for
//! 1.9M pages on bench snapshot 9, and for the change histories 306 MB. Here
//! the table holds 4-byte positions into one vector of entries, which grows by
//! an eighth at a time: about 1.1x the entries' size plus 5 bytes a slot.
//!
//! Entries are never removed (neither the ledger nor the change book forgets
//! a page), and iterate in the order they were inserted.

use std::hash::{BuildHasher, Hash};

use hashbrown::HashTable;

use crate::grow::push_by_eighths;

type Hasher = foldhash::fast::FixedState;

pub struct IdMap<K, V> {
    index: HashTable<u32>,
    entries: Vec<(K, V)>,
    hasher: Hasher,
}

impl<K, V> Default for IdMap<K, V> {
    fn default() -> Self {
        IdMap {
            index: HashTable::new(),
            entries: Vec::new(),
            hasher: Hasher::default(),
        }
    }
}

impl<K: Hash + Eq, V> IdMap<K, V> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn hash(hasher: &Hasher, key: &K) -> u64 {
        hasher.hash_one(key)
    }

    /// Room for `additional` more entries without growing (exactly: the
    /// caller knows the final size, as a restore does).
    pub fn reserve(&mut self, additional: usize) {
        let (entries, hasher) = (&self.entries, &self.hasher);
        self.index
            .reserve(additional, |&i| Self::hash(hasher, &entries[i as usize].0));
        self.entries.reserve_exact(additional);
    }

    fn position(&self, key: &K) -> Option<usize> {
        let hash = Self::hash(&self.hasher, key);
        let entries = &self.entries;
        self.index
            .find(hash, |&i| entries[i as usize].0 == *key)
            .map(|&i| i as usize)
    }

    /// The position of `key`'s entry (in insertion order; it never moves),
    /// and its value.
    pub fn find(&self, key: &K) -> Option<(usize, &V)> {
        self.position(key).map(|i| (i, &self.entries[i].1))
    }

    pub fn get(&self, key: &K) -> Option<&V> {
        self.position(key).map(|i| &self.entries[i].1)
    }

    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.position(key).map(|i| &mut self.entries[i].1)
    }

    /// The value of `key`, inserted from `make` if absent.
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        let i = match self.position(&key) {
            Some(i) => i,
            None => self.push(key, make()),
        };
        &mut self.entries[i].1
    }

    /// Inserts or replaces the value of `key`, returning the one it replaced.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.position(&key) {
            Some(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            None => {
                self.push(key, value);
                None
            }
        }
    }

    /// Appends a key known to be absent; returns its position.
    fn push(&mut self, key: K, value: V) -> usize {
        let i = self.entries.len();
        assert!(
            i < u32::MAX as usize,
            "an IdMap holds fewer than 2^32 entries"
        );
        let hash = Self::hash(&self.hasher, &key);
        // By an eighth rather than doubling: at a million entries of a
        // hundred bytes, doubling leaves up to 100 MB unused.
        push_by_eighths(&mut self.entries, (key, value));
        let (entries, hasher) = (&self.entries, &self.hasher);
        self.index.insert_unique(hash, i as u32, |&j| {
            Self::hash(hasher, &entries[j as usize].0)
        });
        i
    }

    /// The entry at `position` (in insertion order).
    pub fn at(&self, position: usize) -> (&K, &V) {
        let (k, v) = &self.entries[position];
        (k, v)
    }

    /// The entry at `position`, its value to change.
    pub fn at_mut(&mut self, position: usize) -> (&K, &mut V) {
        let (k, v) = &mut self.entries[position];
        (k, v)
    }

    /// The entries in insertion order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&K, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    pub fn keys(&self) -> impl ExactSizeIterator<Item = &K> {
        self.entries.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl ExactSizeIterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }

    /// The bytes the map holds itself (not what its values point to): the
    /// entries' vector and the index's table (a 4-byte position and a control
    /// byte a bucket, 8 buckets to 7 of capacity).
    pub fn heap_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<(K, V)>() + self.index.capacity() * 8 / 7 * 5
    }
}

impl<K: Hash + Eq, V> std::ops::Index<&K> for IdMap<K, V> {
    type Output = V;

    fn index(&self, key: &K) -> &V {
        self.get(key).expect("IdMap: no entry for the key")
    }
}

impl<K: Hash + Eq, V> Extend<(K, V)> for IdMap<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        /// Any sequence of inserts, lookups and get-or-inserts leaves the map
        /// holding what a `std` map holds, in first-insertion order.
        #[test]
        fn behaves_as_a_hash_map(ops in proptest::collection::vec((0u8..3, 0u64..200, any::<u32>()), 0..2000)) {
            let mut ours: IdMap<u64, u32> = IdMap::new();
            let mut std_map: HashMap<u64, u32> = HashMap::new();
            let mut order: Vec<u64> = Vec::new();
            for (op, k, v) in ops {
                if !std_map.contains_key(&k) && op != 1 {
                    order.push(k);
                }
                match op {
                    0 => prop_assert_eq!(ours.insert(k, v), std_map.insert(k, v)),
                    1 => prop_assert_eq!(ours.get(&k), std_map.get(&k)),
                    _ => {
                        let a = *ours.get_or_insert_with(k, || v);
                        let b = *std_map.entry(k).or_insert(v);
                        prop_assert_eq!(a, b);
                        *ours.get_mut(&k).unwrap() += 1;
                        *std_map.get_mut(&k).unwrap() += 1;
                    }
                }
                prop_assert_eq!(ours.len(), std_map.len());
            }
            let keys: Vec<u64> = ours.keys().copied().collect();
            prop_assert_eq!(keys, order);
            for (k, v) in ours.iter() {
                prop_assert_eq!(Some(v), std_map.get(k));
            }
        }
    }

    #[test]
    fn reserve_then_fill_keeps_every_entry() {
        let mut m: IdMap<u64, String> = IdMap::new();
        m.reserve(10_000);
        let cap = m.entries.capacity();
        m.extend((0..10_000u64).map(|i| (i * 7919, i.to_string())));
        assert_eq!(m.entries.capacity(), cap, "no growth past the reserve");
        assert_eq!(m.len(), 10_000);
        assert!((0..10_000u64).all(|i| m[&(i * 7919)] == i.to_string()));
        assert!(m.get(&1).is_none());
    }
}
