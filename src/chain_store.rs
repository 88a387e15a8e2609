//! The change book's observation chains, end to end in large blocks.
//!
//! A page's chain (its packed 8-byte observations, see `change_book`) grows by
//! one entry a snapshot. Kept as a vector per page, 1.4M vectors of 8 to 128
//! bytes on bench snapshot 9, each snapshot moved every chain to the next
//! allocation size among the snapshot's short-lived allocations of the same
//! sizes, and when those were freed the allocator's pages stayed partly used:
//! a run of snapshots 0-9 in one process held about 100 MB more resident
//! memory beside its heap than snapshot 9 run from a restore. Here the chains
//! sit end to end in blocks of [`BLOCK_CHAINS`] chains (about a megabyte each
//! at ten entries a chain). A snapshot's new entries wait in a list, and
//! [`ChainStore::settle`] merges them a block at a time, each block copied
//! once into one of its exact new size.

use crate::grow::{push_by_eighths, room_for};

/// Chains per block: 16,384, so that a block of ten-entry chains is a large
/// allocation of its own (1.3 MB) and a snapshot's merge holds at most one
/// block twice.
pub const BLOCK_CHAINS: usize = 1 << 14;

/// A chain's id: its position in the store, in the order chains were added.
pub type ChainId = u32;

#[derive(Default)]
pub struct ChainStore {
    blocks: Vec<Block>,
    /// Entries appended since the last [`Self::settle`], in order.
    pending: Vec<(ChainId, u64)>,
    /// How many entries the last settle merged: the room `pending` starts with.
    pending_last: usize,
}

#[derive(Default)]
struct Block {
    /// `ends[i]`: where the block's chain `i` ends in `data` (it starts where
    /// chain `i - 1` ends, or at 0).
    ends: Vec<u32>,
    data: Vec<u64>,
}

impl Block {
    fn range(&self, i: usize) -> std::ops::Range<usize> {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        start..self.ends[i] as usize
    }
}

impl ChainStore {
    /// The number of chains.
    pub fn len(&self) -> usize {
        match self.blocks.last() {
            Some(b) => (self.blocks.len() - 1) * BLOCK_CHAINS + b.ends.len(),
            None => 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds a chain holding `entries`; returns its id.
    pub fn push(&mut self, entries: &[u64]) -> ChainId {
        let id = ChainId::try_from(self.len()).expect("fewer than 2^32 chains per worker");
        if self
            .blocks
            .last()
            .is_none_or(|b| b.ends.len() == BLOCK_CHAINS)
        {
            self.blocks.push(Block {
                ends: Vec::with_capacity(BLOCK_CHAINS),
                data: Vec::new(),
            });
        }
        let block = self.blocks.last_mut().expect("a block is open");
        block.data.extend_from_slice(entries);
        block.ends.push(end_of(block.data.len()));
        if block.ends.len() == BLOCK_CHAINS {
            // A full block gets no new chains, only merges of exact size.
            block.data.shrink_to_fit();
        }
        id
    }

    /// The entries of chain `id`, as of the last [`Self::settle`].
    pub fn get(&self, id: ChainId) -> &[u64] {
        let (b, i) = (id as usize / BLOCK_CHAINS, id as usize % BLOCK_CHAINS);
        let block = &self.blocks[b];
        &block.data[block.range(i)]
    }

    /// Appends `entry` to chain `id` at the next [`Self::settle`].
    pub fn append(&mut self, id: ChainId, entry: u64) {
        debug_assert!((id as usize) < self.len());
        if self.pending.is_empty() {
            self.pending.reserve_exact(room_for(self.pending_last));
        }
        push_by_eighths(&mut self.pending, (id, entry));
    }

    /// Whether entries wait for [`Self::settle`].
    pub fn is_settled(&self) -> bool {
        self.pending.is_empty()
    }

    /// Merges the appended entries into their chains, in the order appended.
    pub fn settle(&mut self) {
        let mut pending = std::mem::take(&mut self.pending);
        self.pending_last = pending.len();
        // Stable: a chain's entries keep their order.
        pending.sort_by_key(|p| p.0);
        for run in
            pending.chunk_by(|a, b| a.0 as usize / BLOCK_CHAINS == b.0 as usize / BLOCK_CHAINS)
        {
            let block = &mut self.blocks[run[0].0 as usize / BLOCK_CHAINS];
            let mut data = Vec::with_capacity(block.data.len() + run.len());
            let mut next = run.iter().peekable();
            let mut start = 0;
            for (i, end) in block.ends.iter_mut().enumerate() {
                data.extend_from_slice(&block.data[start..*end as usize]);
                start = *end as usize;
                while let Some(&&(id, entry)) = next.peek() {
                    if id as usize % BLOCK_CHAINS != i {
                        break;
                    }
                    data.push(entry);
                    next.next();
                }
                *end = end_of(data.len());
            }
            block.data = data;
        }
    }

    /// The bytes the store holds.
    pub fn heap_bytes(&self) -> usize {
        let blocks: usize = self
            .blocks
            .iter()
            .map(|b| b.ends.capacity() * 4 + b.data.capacity() * 8)
            .sum();
        blocks
            + self.blocks.capacity() * std::mem::size_of::<Block>()
            + self.pending.capacity() * std::mem::size_of::<(ChainId, u64)>()
    }
}

fn end_of(len: usize) -> u32 {
    u32::try_from(len).expect("fewer than 2^32 entries in a block of chains")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Against a vector per chain: chains added across several blocks, some
    /// restored with entries, entries appended over rounds (several to one
    /// chain in a round, most chains untouched in some rounds).
    #[test]
    fn chains_match_a_vector_per_chain() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(9);
        let mut store = ChainStore::default();
        let mut reference: Vec<Vec<u64>> = Vec::new();
        for round in 0..6 {
            for _ in 0..rng.random_range(0..BLOCK_CHAINS) {
                let entries: Vec<u64> = (0..rng.random_range(0..4)).map(|_| rng.random()).collect();
                assert_eq!(store.push(&entries) as usize, reference.len());
                reference.push(entries);
            }
            for _ in 0..rng.random_range(0..3 * reference.len()) {
                let id = rng.random_range(0..reference.len());
                let entry = rng.random::<u64>() | round;
                store.append(id as ChainId, entry);
                reference[id].push(entry);
            }
            store.settle();
            assert!(store.is_settled());
            assert_eq!(store.len(), reference.len());
            for (id, chain) in reference.iter().enumerate() {
                assert_eq!(store.get(id as ChainId), &chain[..], "chain {id}");
            }
        }
        assert!(store.blocks.len() > 2, "{} blocks", store.blocks.len());
        let entries: usize = reference.iter().map(Vec::len).sum();
        assert!(store.heap_bytes() >= entries * 8);
    }

    #[test]
    fn a_full_block_is_exactly_sized() {
        let mut store = ChainStore::default();
        for i in 0..BLOCK_CHAINS + 1 {
            store.push(&[i as u64; 3]);
        }
        assert_eq!(store.blocks[0].data.capacity(), 3 * BLOCK_CHAINS);
        store.append(5, 7);
        store.append(BLOCK_CHAINS as ChainId, 8);
        store.settle();
        assert_eq!(store.blocks[0].data.capacity(), 3 * BLOCK_CHAINS + 1);
        assert_eq!(store.get(5), &[5, 5, 5, 7]);
        assert_eq!(store.get(6), &[6, 6, 6]);
        let b = BLOCK_CHAINS as u64;
        assert_eq!(store.get(BLOCK_CHAINS as ChainId), &[b, b, b, 8]);
    }
}
