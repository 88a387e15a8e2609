//! An open-addressing table of 32-bit values, each beside 32 bits of its
//! key's hash (its tag), for lookups that a caller issues many at a time.
//!
//! Ingest looks up millions of strings in tables of a million entries (a
//! link table's distinct URLs: `ingest::UrlCache`), and nearly every lookup
//! missed the cache three or four times in a row: the table's control bytes,
//! its slot, the entry the slot names, the entry's bytes. A lookup that waits
//! on each miss in turn leaves the memory system idle; a batch that first
//! issues every key's first miss ([`TagTable::prefetch`]), then every key's
//! second, keeps many in flight at once. `hashbrown` hides where a key's
//! bucket is, so it cannot be asked to fetch it ahead; here a key's first
//! slot is a function of its tag alone ([`TagTable::home`]).
//!
//! A slot is 8 bytes: the tag in the high half, the value in the low. Keys
//! are probed linearly from their home slot, and the table is at most three
//! quarters full, so a key that is present is a slot or two from home and an
//! absent one a few more, nearly always in the same cache line. A slot's home
//! is the top bits of its tag, so the slots are in the order of their tags
//! (wrapping at the end), and growing the table moves them in one pass.
//! Values are never removed.

use crate::prefetch::prefetch;

/// A slot that holds nothing: the one tag and value pair that
/// [`TagTable::insert`] refuses.
const EMPTY: u64 = u64::MAX;

/// The fewest slots a table that holds anything has.
const MIN_SLOTS: usize = 16;

#[derive(Clone, Default)]
pub struct TagTable {
    slots: Vec<u64>,
    len: usize,
}

impl TagTable {
    pub fn new() -> TagTable {
        TagTable::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slot where the search for `tag` starts: its top bits, as many as
    /// the slot count (a power of two) needs.
    fn home(&self, tag: u32) -> usize {
        let bits = self.slots.len().trailing_zeros();
        ((u64::from(tag) << bits) >> 32) as usize
    }

    /// Asks the processor to bring `tag`'s home slot into the cache, so that
    /// a [`find`](Self::find) for it soon after does not wait on memory.
    #[inline]
    pub fn prefetch(&self, tag: u32) {
        if !self.slots.is_empty() {
            prefetch(&self.slots[self.home(tag)]);
        }
    }

    /// The values whose tag is `tag`, in probe order: those of the keys that
    /// may equal the one sought (a caller compares each key in turn).
    pub fn candidates(&self, tag: u32) -> impl Iterator<Item = u32> + '_ {
        let mask = self.slots.len().wrapping_sub(1);
        let mut i = if self.slots.is_empty() {
            None
        } else {
            Some(self.home(tag))
        };
        std::iter::from_fn(move || loop {
            let at = i?;
            let slot = self.slots[at];
            if slot == EMPTY {
                i = None;
                return None;
            }
            i = Some((at + 1) & mask);
            if (slot >> 32) as u32 == tag {
                return Some(slot as u32);
            }
        })
    }

    /// The first value with tag `tag` for which `eq` holds.
    #[inline]
    pub fn find(&self, tag: u32, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        self.candidates(tag).find(|&v| eq(v))
    }

    /// Adds `value` under `tag` (the caller knows its key is absent).
    ///
    /// # Panics
    /// If `value` is `u32::MAX` with `tag` `u32::MAX` (the empty slot's bits).
    pub fn insert(&mut self, tag: u32, value: u32) {
        let slot = u64::from(tag) << 32 | u64::from(value);
        assert!(
            slot != EMPTY,
            "TagTable: the value u32::MAX under the tag u32::MAX"
        );
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow((self.slots.len() * 2).max(MIN_SLOTS));
        }
        self.place(slot);
        self.len += 1;
    }

    /// Room for `additional` more values without growing.
    pub fn reserve(&mut self, additional: usize) {
        let need = (self.len + additional) * 4 / 3 + 1;
        if need > self.slots.len() {
            self.grow(need.next_power_of_two().max(MIN_SLOTS));
        }
    }

    /// Puts `slot` in the first free slot from its home (there is one).
    fn place(&mut self, slot: u64) {
        let mask = self.slots.len() - 1;
        let mut i = self.home((slot >> 32) as u32);
        while self.slots[i] != EMPTY {
            i = (i + 1) & mask;
        }
        self.slots[i] = slot;
    }

    fn grow(&mut self, slots: usize) {
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; slots]);
        // The old slots are in the order of their homes, and so are the new
        // ones; only a run that wrapped past the end comes out of order, and
        // placing each in turn puts it right.
        for slot in old.into_iter().filter(|&s| s != EMPTY) {
            self.place(slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        /// Whatever the tags (many equal, many at the ends of the range, so
        /// that runs wrap), every value is found under its tag, and nothing
        /// else is.
        #[test]
        fn finds_what_a_map_of_lists_holds(
            tags in proptest::collection::vec(
                prop_oneof![0u32..8, u32::MAX - 8..=u32::MAX, any::<u32>()],
                0..3000,
            ),
            reserve in 0usize..2000,
        ) {
            let mut table = TagTable::new();
            table.reserve(reserve);
            let mut lists: HashMap<u32, Vec<u32>> = HashMap::new();
            for (value, &tag) in tags.iter().enumerate() {
                table.insert(tag, value as u32);
                lists.entry(tag).or_default().push(value as u32);
                prop_assert!(table.len() * 4 <= table.slots.len() * 3);
            }
            prop_assert_eq!(table.len(), tags.len());
            for (tag, values) in &lists {
                let mut found: Vec<u32> = table.candidates(*tag).collect();
                found.sort_unstable();
                prop_assert_eq!(&found, values);
                prop_assert_eq!(table.find(*tag, |v| v == *values.last().unwrap()), values.last().copied());
            }
            for tag in [1u32 << 20, 12345, u32::MAX - 20] {
                if !lists.contains_key(&tag) {
                    prop_assert_eq!(table.candidates(tag).count(), 0);
                }
            }
        }
    }

    #[test]
    fn reserve_makes_room_once() {
        let mut table = TagTable::new();
        table.reserve(1000);
        let slots = table.slots.len();
        for v in 0..1000u32 {
            table.insert(v.wrapping_mul(2_654_435_761), v);
        }
        assert_eq!(table.slots.len(), slots, "no growth past the reserve");
        assert!(table.find(0, |v| v == 0).is_some());
        assert!(TagTable::new().find(7, |_| true).is_none());
    }

    #[test]
    #[should_panic(expected = "u32::MAX")]
    fn the_empty_slots_bits_are_refused() {
        TagTable::new().insert(u32::MAX, u32::MAX);
    }
}
