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
//! The table ([`Index`]) is `hashbrown`'s layout probed linearly: a tag byte
//! and a position a slot, in two arrays, so that where a key's search starts
//! is known from its hash, and many keys looked up together
//! ([`IdMap::find_each`]) have each one's slots fetched ahead, then each
//! one's entry, before any is compared. The ledger looks up
//! every page a snapshot names (2.7M on bench snapshot 9), nearly each a
//! cache miss at every step.
//!
//! Entries are never removed (neither the ledger nor the change book forgets
//! a page), and iterate in the order they were inserted.

use std::hash::{BuildHasher, Hash};

use crate::grow::push_by_eighths;
use crate::prefetch::prefetch;

type Hasher = foldhash::fast::FixedState;

pub struct IdMap<K, V> {
    index: Index,
    entries: Vec<(K, V)>,
    hasher: Hasher,
}

impl<K, V> Default for IdMap<K, V> {
    fn default() -> Self {
        IdMap {
            index: Index::default(),
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

    /// The hash of `key` that the map files it under.
    fn hash(&self, key: &K) -> u64 {
        self.hasher.hash_one(key)
    }

    /// The map of `entries` in their order, which takes their vector as
    /// its own (no copy; its spare capacity is room for later inserts) and
    /// files each key in a new index. A key given twice ends as
    /// [`Extend`] would leave it: at its first position, with its last
    /// value.
    ///
    /// The index has room for the vector's capacity, not its length: the
    /// inserts its spare room is for then file their keys without the
    /// index growing, which rehashes every key (a restored ledger's next
    /// fold grew it on bench snapshot 9, 0.9M keys a worker).
    pub fn from_entries(entries: Vec<(K, V)>) -> Self {
        let mut map = IdMap::new();
        let no_rehash = |_: u32| -> u64 { unreachable!("an empty index moves nothing") };
        map.index.reserve(entries.capacity(), no_rehash);
        // Each key's slots are asked for this many keys ahead: the index of
        // a million entries is far larger than the cache.
        const AHEAD: usize = 16;
        for (i, (key, _)) in entries.iter().enumerate() {
            if let Some((ahead, _)) = entries.get(i + AHEAD) {
                map.index.prefetch(map.hasher.hash_one(ahead));
            }
            let hash = map.hasher.hash_one(key);
            if map
                .index
                .candidates(hash)
                .any(|j| entries[j as usize].0 == *key)
            {
                // Rare (never in a state webevo wrote): the general path.
                let mut map = IdMap::new();
                map.reserve(entries.len());
                map.extend(entries);
                return map;
            }
            map.index.insert(hash, i as u32, no_rehash);
        }
        map.entries = entries;
        map
    }

    /// Room for `additional` more entries without growing (exactly: the
    /// caller knows the final size, as a restore does).
    pub fn reserve(&mut self, additional: usize) {
        let (entries, hasher) = (&self.entries, &self.hasher);
        self.index
            .reserve(additional, |i| hasher.hash_one(&entries[i as usize].0));
        self.entries.reserve_exact(additional);
    }

    /// Asks the processor for the slots where the search for the key of
    /// hash `hash` starts (see the module docs).
    #[inline]
    fn prefetch(&self, hash: u64) {
        self.index.prefetch(hash);
    }

    /// The position of the first entry whose slot's tag matches `hash`'s,
    /// likely the key's (to prefetch with [`IdMap::prefetch_entry`]).
    fn candidate(&self, hash: u64) -> Option<usize> {
        self.index.candidates(hash).next().map(|i| i as usize)
    }

    /// Asks the processor for the entry at `position`.
    #[inline]
    pub fn prefetch_entry(&self, position: usize) {
        if let Some(e) = self.entries.get(position) {
            prefetch(e);
        }
    }

    /// The position of `key`'s entry, `hash` being its [`hash`](Self::hash).
    pub fn position_hashed(&self, hash: u64, key: &K) -> Option<usize> {
        let entries = &self.entries;
        self.index
            .candidates(hash)
            .find(|&i| entries[i as usize].0 == *key)
            .map(|i| i as usize)
    }

    /// Looks up each of `keys` and hands it to `f` with its entry's position
    /// and value, if present: [`LOOKUP_GROUP`] keys at a time, the slots of
    /// all of them asked for first, then their entries, so that a group's
    /// cache misses overlap (for many keys in no useful order; see the
    /// module docs).
    pub fn find_each<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k K>,
        f: impl FnMut(&'k K, Option<(usize, &V)>),
    ) where
        K: 'k,
    {
        self.find_each_ahead(keys, |_| {}, f);
    }

    /// [`find_each`](Self::find_each), calling `ahead` on each value found
    /// once the group's entries are in, before any is handed to `f`: for
    /// asking in turn for what the values point to (a URL's bytes).
    pub fn find_each_ahead<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k K>,
        ahead: impl Fn(&V),
        mut f: impl FnMut(&'k K, Option<(usize, &V)>),
    ) where
        K: 'k,
    {
        let mut keys = keys.into_iter().peekable();
        let mut group: Vec<(&K, u64)> = Vec::with_capacity(LOOKUP_GROUP);
        let mut found: Vec<Option<usize>> = Vec::with_capacity(LOOKUP_GROUP);
        while keys.peek().is_some() {
            group.clear();
            group.extend(keys.by_ref().take(LOOKUP_GROUP).map(|k| (k, self.hash(k))));
            group.iter().for_each(|&(_, h)| self.prefetch(h));
            for &(_, h) in &group {
                if let Some(i) = self.candidate(h) {
                    self.prefetch_entry(i);
                }
            }
            found.clear();
            found.extend(group.iter().map(|&(k, h)| self.position_hashed(h, k)));
            found
                .iter()
                .flatten()
                .for_each(|&i| ahead(&self.entries[i].1));
            for (&(k, _), &i) in group.iter().zip(&found) {
                f(k, i.map(|i| (i, &self.entries[i].1)));
            }
        }
    }

    fn position(&self, key: &K) -> Option<usize> {
        self.position_hashed(self.hash(key), key)
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
        let hash = self.hash(&key);
        // By an eighth rather than doubling: at a million entries of a
        // hundred bytes, doubling leaves up to 100 MB unused.
        push_by_eighths(&mut self.entries, (key, value));
        let (entries, hasher) = (&self.entries, &self.hasher);
        self.index
            .insert(hash, i as u32, |j| hasher.hash_one(&entries[j as usize].0));
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
    /// entries' vector and the index's table (a 4-byte position and a tag
    /// byte a slot).
    pub fn heap_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<(K, V)>() + self.index.heap_bytes()
    }
}

/// Keys [`IdMap::find_each`] looks up together: enough misses in flight to
/// keep the memory busy, few enough that a group's lines stay in the cache
/// from its first step to its last.
const LOOKUP_GROUP: usize = 32;

/// Positions into the entries, each under a byte of its key's hash (its
/// tag; 0 marks an empty slot), probed linearly from the slot the hash's low
/// bits pick, and at most 7/8 full: `hashbrown`'s layout and load, without
/// its groups, so that a search's first slots are known before it starts.
#[derive(Default)]
struct Index {
    tags: Vec<u8>,
    positions: Vec<u32>,
    len: usize,
}

impl Index {
    /// The fewest slots an index that holds anything has.
    const MIN_SLOTS: usize = 16;

    fn tag(hash: u64) -> u8 {
        ((hash >> 56) as u8).max(1)
    }

    fn home(&self, hash: u64) -> usize {
        hash as usize & (self.tags.len() - 1)
    }

    #[inline]
    fn prefetch(&self, hash: u64) {
        if !self.tags.is_empty() {
            let home = self.home(hash);
            prefetch(&self.tags[home]);
            prefetch(&self.positions[home]);
        }
    }

    /// The positions under `hash`'s tag, in probe order.
    fn candidates(&self, hash: u64) -> impl Iterator<Item = u32> + '_ {
        let tag = Self::tag(hash);
        let mask = self.tags.len().wrapping_sub(1);
        let mut at = (!self.tags.is_empty()).then(|| self.home(hash));
        std::iter::from_fn(move || loop {
            let i = at?;
            match self.tags[i] {
                0 => {
                    at = None;
                    return None;
                }
                t => {
                    at = Some((i + 1) & mask);
                    if t == tag {
                        return Some(self.positions[i]);
                    }
                }
            }
        })
    }

    /// Files `position` under `hash`; `rehash` gives the hash of the key at
    /// a position, for moving the others when the index grows.
    fn insert(&mut self, hash: u64, position: u32, rehash: impl Fn(u32) -> u64) {
        if (self.len + 1) * 8 > self.tags.len() * 7 {
            self.grow((self.tags.len() * 2).max(Self::MIN_SLOTS), rehash);
        }
        self.place(hash, position);
        self.len += 1;
    }

    fn reserve(&mut self, additional: usize, rehash: impl Fn(u32) -> u64) {
        let need = (self.len + additional) * 8 / 7 + 1;
        if need > self.tags.len() {
            self.grow(need.next_power_of_two().max(Self::MIN_SLOTS), rehash);
        }
    }

    fn place(&mut self, hash: u64, position: u32) {
        let mask = self.tags.len() - 1;
        let mut i = self.home(hash);
        while self.tags[i] != 0 {
            i = (i + 1) & mask;
        }
        self.tags[i] = Self::tag(hash);
        self.positions[i] = position;
    }

    /// Moves every position to a new index of `slots` slots.
    ///
    /// The positions filed are `0..len`: an [`IdMap`] files each entry's
    /// position once, as it appends the entry, and never removes one. So
    /// the keys are rehashed in the order of their entries, which the
    /// processor reads ahead, not in the order of the old slots, each of
    /// which named an entry anywhere in the map: a cache miss a key, which
    /// made a restored page map's growth in the next fold a quarter of its
    /// pages phase on bench snapshot 9 (about 0.05 s a worker).
    fn grow(&mut self, slots: usize, rehash: impl Fn(u32) -> u64) {
        self.tags = vec![0; slots];
        self.positions = vec![0; slots];
        let len = u32::try_from(self.len).expect("an IdMap holds fewer than 2^32 entries");
        for p in 0..len {
            self.place(rehash(p), p);
        }
    }

    fn heap_bytes(&self) -> usize {
        self.tags.capacity() + self.positions.capacity() * std::mem::size_of::<u32>()
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
    fn find_each_finds_what_find_finds() {
        let mut m: IdMap<u64, u64> = IdMap::new();
        m.extend((0..1000u64).map(|i| (i * 31, i)));
        let keys: Vec<u64> = (0..3000u64).rev().collect();
        let mut seen = Vec::new();
        m.find_each(&keys, |k, found| {
            assert_eq!(found.map(|(i, v)| (i, *v)), m.find(k).map(|(i, v)| (i, *v)));
            seen.push(*k);
        });
        assert_eq!(seen, keys, "every key, in order");
    }

    proptest! {
        /// A map made from a vector of entries is the map that inserting
        /// them one by one makes (duplicate keys included), and keeps the
        /// vector's spare room.
        #[test]
        fn from_entries_is_extend(keys in proptest::collection::vec(0u64..3000, 0..3000), dup_free in any::<bool>()) {
            let mut keys = keys;
            if dup_free {
                keys.sort_unstable();
                keys.dedup();
            }
            let entries: Vec<(u64, usize)> = keys.iter().enumerate().map(|(i, &k)| (k * 7919, i)).collect();
            let mut extended: IdMap<u64, usize> = IdMap::new();
            extended.extend(entries.iter().copied());
            let mut room = Vec::with_capacity(entries.len() + 100);
            room.extend(entries.iter().copied());
            let made = IdMap::from_entries(room);
            prop_assert_eq!(made.iter().collect::<Vec<_>>(), extended.iter().collect::<Vec<_>>());
            for &k in &keys {
                prop_assert_eq!(made.find(&(k * 7919)), extended.find(&(k * 7919)));
            }
            prop_assert_eq!(made.get(&1), None);
            if dup_free {
                prop_assert_eq!(made.entries.capacity(), entries.len() + 100);
                // The room's inserts need no larger index.
                let mut made = made;
                let slots = made.index.tags.len();
                for k in 0..100u64 {
                    made.insert(k * 7919 + 1, 0);
                }
                prop_assert_eq!(made.index.tags.len(), slots);
                prop_assert_eq!(made.get(&(99 * 7919 + 1)), Some(&0));
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
