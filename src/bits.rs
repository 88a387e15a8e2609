//! A set of small integers as a bit each: which endpoints of the URL cache
//! are pages and which were announced, which links of a set are new, which
//! sites off-site links reached. Each is dense over its index range, where a
//! hash set would take a probe (and a cache miss) per member.

/// A set of `usize` indices, a bit each in 64-bit words. Indices past the
/// words held are absent; [`Bits::insert`] grows the words to hold its index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bits {
    words: Vec<u64>,
}

impl Bits {
    /// The empty set, with room for indices `0..len` without growing.
    pub fn with_len(len: usize) -> Bits {
        Bits {
            words: vec![0; len.div_ceil(64)],
        }
    }

    pub fn contains(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }

    /// Adds `i`; returns whether it was absent (as `HashSet::insert` does).
    pub fn insert(&mut self, i: usize) -> bool {
        let word = i / 64;
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        let bit = 1u64 << (i % 64);
        let absent = self.words[word] & bit == 0;
        self.words[word] |= bit;
        absent
    }

    /// The set as its words, bit `i % 64` of word `i / 64` for index `i`
    /// (how the state stores a set: [`crate::state::PackedLinks`]).
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// The set whose words are `words` (see [`Bits::words`]).
    pub fn from_words(words: Vec<u64>) -> Bits {
        Bits { words }
    }

    pub fn heap_bytes(&self) -> usize {
        self.words.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn agrees_with_a_btree_set() {
        // Indices around word boundaries and far apart, some twice.
        let picks = [0usize, 63, 64, 65, 127, 128, 1000, 64, 5000, 0, 4999, 130];
        let mut bits = Bits::with_len(100);
        let mut set = BTreeSet::new();
        for &i in &picks {
            assert_eq!(bits.insert(i), set.insert(i), "insert {i}");
        }
        for i in 0..6000 {
            assert_eq!(bits.contains(i), set.contains(&i), "contains {i}");
        }
        assert!(!bits.contains(usize::MAX), "far past the words held");
    }

    #[test]
    fn with_len_holds_its_range_without_growing() {
        let mut bits = Bits::with_len(129);
        let room = bits.heap_bytes();
        assert_eq!(room, 3 * 8);
        assert!((0..129).all(|i| !bits.contains(i)));
        assert!(bits.insert(128));
        assert_eq!(bits.heap_bytes(), room);
        assert_eq!(Bits::default().heap_bytes(), 0);
    }
}
